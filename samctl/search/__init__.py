"""Full-text search building blocks: tokenizer (``text``) and BM25 ranking (``rank``); stdlib + numpy only."""
