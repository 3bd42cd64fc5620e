"""How results are ordered: hybrid fusion, decay by age, and the time a question names (pure)."""
