"""Event sources (Kafka, JSONL file, stdin) and the poll loop that feeds the pipeline."""
