"""A small classification task made up on the spot, so chapter 8 needs no data set download.

    points, labels = labelled_points(4096, features=8, classes=4, seed=0)
    train_classifier(model, points[:3072], labels[:3072], steps=60)

The labels come from a fixed random "teacher" network, so the task is learnable but not linear.
"""

from __future__ import annotations

import torch
from torch import nn


def labelled_points(
    count: int, features: int = 8, classes: int = 4, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """`count` Gaussian points and the class a random tanh network gives each of them."""
    generator = torch.Generator().manual_seed(seed)
    points = torch.randn(count, features, generator=generator)
    hidden = torch.randn(features, 4 * classes, generator=generator) / features**0.5
    scores = torch.randn(4 * classes, classes, generator=generator)
    labels = (torch.tanh(2 * points @ hidden) @ scores).argmax(dim=-1)
    return points, labels


def train_classifier(
    model: nn.Module, points: torch.Tensor, labels: torch.Tensor, steps: int = 60, lr: float = 1e-2
) -> float:
    """Full-batch Adam on cross-entropy; leaves the model in eval mode and returns the last loss."""
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(steps):
        loss = nn.functional.cross_entropy(model(points), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    return loss.item()
