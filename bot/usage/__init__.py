"""The usage stage: which real models run each operator, per release and per path (`models`).

The work stage ranks a backend's work by the compiler's signals (the core tag, how many operators
decompose into one); this stage says what users run: a shipped table per torch release, recorded by
scripts/model_corpus.py from a corpus of real models on a real torch.
"""
