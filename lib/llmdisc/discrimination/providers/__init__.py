"""LLM providers behind one small async interface; see :mod:`llmdisc.discrimination.providers.base`."""
