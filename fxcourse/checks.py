"""Checkpoint asserts for the "try it" prompts in the chapters."""


def checkpoint(passed: bool, hint: str) -> None:
    """Raise with `hint` when the learner's result is not right yet; otherwise say so briefly."""
    if not passed:
        raise AssertionError(f"Not yet: {hint}")
    print("Checkpoint passed.")
