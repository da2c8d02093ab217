"""What `make similarity` found for one exercise: its pairs and who was left out (written by
grader/similarity.py, read by grader/similarity_page.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Pair:
    assignment: str
    first: str
    second: str
    share_first: float  # of the first's fingerprints, found in the second
    share_second: float
    marked_first: list[tuple[int, int]]  # character ranges of the first's answer that match
    marked_second: list[tuple[int, int]]

    @property
    def score(self) -> float:
        return (self.share_first + self.share_second) / 2


@dataclass
class Compared:
    """One exercise: its pairs, most alike first; each learner's code; who was left out, why."""

    pairs: list[Pair]
    codes: dict[str, str]
    left_out: dict[str, str]
