"""Browser labelling app for the human pilot (stage 06), and the label files it writes.

``session`` holds the protocol as plain, tested functions; ``app`` is the Streamlit page only; ``schema`` is
the label-file schema; ``label_files`` reads and checks label files. Start the app with ``llmdisc label``.
"""
