"""Adapters for host frameworks (outer ring): import each from its own module.

- ``concordia``: :class:`~f09_memory.integrations.concordia.AssociativeMemoryBank`, a drop-in
  for Concordia's memory bank backed by a :class:`~f09_memory.MemoryEngine` (extra
  ``[concordia]``), with ``bank_config`` and ``cosine_only_scoring``.
- ``callable_embedder``: :class:`~f09_memory.integrations.callable_embedder.CallableEmbedder`,
  an ``EmbeddingProvider`` over a one-text embedder function (Concordia's kind).
- ``mesa``: :class:`~f09_memory.integrations.mesa.ModelMemory` (one engine per Mesa model,
  the model's step as logical time, its seed as the engine seed) and
  :class:`~f09_memory.integrations.mesa.MemoryAgentMixin` (``self.memory`` on an agent)
  (extra ``[mesa]``).

Neither module imports its framework at import time (both work on duck-typed objects), so
``import f09_memory.integrations.concordia`` succeeds without the extra installed; nothing
here is re-exported by ``f09_memory``.
"""

__all__: list[str] = []
