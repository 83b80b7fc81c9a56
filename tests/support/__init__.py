"""Test helpers: loopback HTTP servers speaking each provider's real wire protocol.

Import from here::

    from support import OpenAIWireServer, OllamaWireServer, GeminiWireServer, Fault
"""

from support.wire_base import (
    VALID_VERDICT,
    Fault,
    RecordedRequest,
    WireAnswer,
    WireChat,
    WireServer,
    WireToken,
    answer_from_provider,
    answer_tokens,
    fixed_answer,
    plain_tokens,
    scripted_label_answer,
)
from support.wire_servers import GeminiWireServer, OllamaWireServer, OpenAIWireServer, ollama_digest

__all__ = [
    "VALID_VERDICT", "Fault", "RecordedRequest", "WireAnswer", "WireChat", "WireServer", "WireToken",
    "answer_from_provider", "answer_tokens", "fixed_answer", "plain_tokens", "scripted_label_answer",
    "GeminiWireServer", "OllamaWireServer", "OpenAIWireServer", "ollama_digest",
]
