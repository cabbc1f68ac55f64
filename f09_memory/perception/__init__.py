"""Engine-event ingestion (spec section 13, F02): typed events routed to perceivers."""

from f09_memory.perception.events import MAX_COORDINATE, EngineEvent, render_text
from f09_memory.perception.placements import Placements
from f09_memory.perception.router import RoutedFrame, parse_events, route_events
from f09_memory.perception.service import Perception

__all__ = ["MAX_COORDINATE", "EngineEvent", "Perception", "Placements", "RoutedFrame",
           "parse_events", "render_text", "route_events"]
