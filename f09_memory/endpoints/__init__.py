"""HTTP endpoints (index 18): the Memory Viewer's API over one engine, and the thread model.

Parts: ``host`` (EngineHost: requests marshalled to the engine's owner thread, pumped by
the host loop between frames), ``settings`` (ServerSettings, ``MEMORY_SERVER_*``).
"""

from f09_memory.endpoints.host import EngineHost, HostBusyError
from f09_memory.endpoints.settings import ServerSettings

__all__ = ["EngineHost", "HostBusyError", "ServerSettings"]
