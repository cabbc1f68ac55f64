"""Social layer (index 15): a relationship ledger, notable-change records, hearsay provenance.

Modules: ``ledger`` (SocialLedger, the state table, and its batch kernel), ``interactions``
(Interaction and batch validation), ``opinion`` (Opinion), ``service`` (SocialService, what
``engine.interact``/``interact_many``/``hear``/``opinion``/``acquaintances`` delegate to).
"""

from f09_memory.social.interactions import HEARSAY, Interaction, parse_interactions
from f09_memory.social.ledger import LedgerBatch, LedgerOutcome, LedgerRules, SocialLedger
from f09_memory.social.opinion import AcquaintanceOrder, Opinion
from f09_memory.social.service import SocialService

__all__ = [
    "HEARSAY",
    "AcquaintanceOrder",
    "Interaction",
    "LedgerBatch",
    "LedgerOutcome",
    "LedgerRules",
    "Opinion",
    "SocialLedger",
    "SocialService",
    "parse_interactions",
]
