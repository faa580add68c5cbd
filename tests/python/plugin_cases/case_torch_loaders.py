# SPDX-License-Identifier: MIT
"""DataLoaders whose memory the loaderlens marker judges; run by test_pytest_plugin.py in a pytest
of its own. loaderlens.torch.track(..., sample_new_workers=True) makes each worker wait for its
first sample before it works, so that reading precedes what it copies (without it the copy was
found in 7 of 7 runs here too, 4 of them under stress-ng, but only because the recorder's first
reading came early enough), and marks each epoch's end while its workers live. The environment switches the faults off, for checking that the outer test can fail:
CASE_ITERATE=0 (the list is not walked), CASE_LEAK_MIB=0 (no leak)."""

import os

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset

import loaderlens.torch

OBJECTS = 2_900_000  # distinct ints > 256: 32 bytes each, ~90 MiB of objects, + a 22 MiB list
ITERATE = os.environ.get("CASE_ITERATE", "1") == "1"
LEAK_MIB = int(os.environ.get("CASE_LEAK_MIB", "16"))


class ListOfInts(Dataset):
    """Every sample walks the whole list: each int's refcount is written, so each worker copies
    every page of them (copy-on-read)."""

    def __init__(self):
        self.values = list(range(1000, 1000 + OBJECTS))

    def __len__(self):
        return 2

    def __getitem__(self, index):
        total = 0
        if ITERATE:
            for value in self.values:
                total += value
        return torch.tensor(total)


class ArrayOfInts(Dataset):
    """The same numbers in one numpy array: summing reads its pages, writes none."""

    def __init__(self):
        self.values = np.arange(1000, 1000 + OBJECTS, dtype=np.int64)

    def __len__(self):
        return 2

    def __getitem__(self, index):
        return torch.tensor(int(self.values.sum()))


class Leaky(Dataset):
    """Each sample keeps LEAK_MIB of written memory in the worker that made it."""

    kept = []

    def __len__(self):
        return 2

    def __getitem__(self, index):
        Leaky.kept.append(bytearray(b"x" * (LEAK_MIB << 20)))
        return torch.tensor(index)


def one_epoch(dataset):
    loader = DataLoader(dataset, batch_size=1, num_workers=2,
                        multiprocessing_context="fork", persistent_workers=False)
    return [int(batch) for batch in loaderlens.torch.track(loader, sample_new_workers=True)]


@pytest.mark.loaderlens(forbid=["copy_on_read"])
def test_list_copied_on_read():
    assert len(one_epoch(ListOfInts())) == 2


@pytest.mark.loaderlens(forbid=["copy_on_read"])
def test_numpy_control():
    assert len(one_epoch(ArrayOfInts())) == 2


@pytest.mark.loaderlens(growth_rss="8MiB", warmup_epochs=1)
def test_persistent_workers_leak():
    loader = loaderlens.torch.track(
        DataLoader(Leaky(), batch_size=1, num_workers=2, multiprocessing_context="fork",
                   persistent_workers=True))
    for _ in range(4):
        assert len([batch for batch in loader]) == 2
