"""Expert iteration: the optimisation loop samples, the judge filters, training fine-tunes, round after round.

The one stage that drives both the loop (inference) and training; neither of those imports the other.
"""
