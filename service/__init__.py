"""goldwatch: watch a RAG system's live traffic against its gold set.

The ``service`` package holds the domain (records, retrieval metrics, gold set and corpus I/O,
retrievers, evaluation reports) and, later, the HTTP API. Domain modules import no Kafka, HTTP
server or Prometheus code.
"""

__version__ = "0.1.0"
