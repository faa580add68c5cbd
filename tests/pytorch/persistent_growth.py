# SPDX-License-Identifier: MIT
# User reports 000 and 002 as a training job: a shuffled DataLoader whose workers read a dataset
# through a mapping (np.load(mmap_mode="r") opened before fork, or an LMDB environment opened in
# each worker, which this job first builds itself), persistent or not. At each epoch's end, while
# the workers are idle (persistent ones wait for the next epoch; the last batch of a non-persistent
# iterator is held back so its workers are still alive), the job reads each worker's RSS of the
# data file from /proc/PID/smaps (the oracle), marks the epoch as the docs say and waits for the
# recorder's acknowledgement of the sample that marker asked for.
#
#   python3 persistent_growth.py npy|lmdb DATA EPOCHS PERSISTENT WORKERS ORACLE.json
import json
import os
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, RandomSampler
# The package's marker protocol (python/loaderlens), from the source tree beside these tests.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import loaderlens  # noqa: E402

RECORD_BYTES = 256 * 1024  # far larger than the fault-around window (64 KiB)


class NpyDataset(Dataset):
    def __init__(self, path):
        self.x = np.load(path, mmap_mode="r")

    def __len__(self):
        return self.x.shape[0]

    def __getitem__(self, i):
        return torch.from_numpy(np.array(self.x[i]))


class LmdbDataset(Dataset):
    def __init__(self, path, count):
        self.path, self.count, self.env = path, count, None

    def __len__(self):
        return self.count

    def __getitem__(self, i):
        import lmdb

        if self.env is None:  # opened in each worker, as py-lmdb's docs ask
            self.env = lmdb.open(self.path, readonly=True, lock=False, subdir=True)
        with self.env.begin() as txn:
            value = txn.get(b"%08d" % i)
        return torch.frombuffer(bytearray(value), dtype=torch.uint8).float()


def build_lmdb(path, count):
    import lmdb

    env = lmdb.open(path, map_size=1 << 30, subdir=True)
    rng = np.random.default_rng(0)
    for first in range(0, count, 256):
        with env.begin(write=True) as txn:
            for i in range(first, min(count, first + 256)):
                txn.put(b"%08d" % i, rng.bytes(RECORD_BYTES))
    env.close()


def file_rss_kb(pid, path):
    """The RSS of `path` in process `pid`, summed over its mappings (/proc/PID/smaps)."""
    total, current = 0, None
    with open(f"/proc/{pid}/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5:  # a mapping's header line
                current = fields[5] if len(fields) >= 6 else None
            elif fields[0] == "Rss:" and current == path:
                total += int(fields[1])
    return total


def main():
    kind, data, epochs, persistent, workers, oracle = sys.argv[1:7]
    epochs, persistent, workers = int(epochs), persistent == "1", int(workers)
    torch.manual_seed(0)
    if kind == "lmdb":
        count = 512  # 128 MiB of values
        build_lmdb(data, count)
        dataset, mapped = LmdbDataset(data, count), os.path.realpath(os.path.join(data, "data.mdb"))
    else:
        dataset, mapped = NpyDataset(data), os.path.realpath(data)
    # A quarter of the dataset per epoch, drawn anew each epoch: each worker maps a little more
    # of the file every epoch instead of nearly all of it in the first (the page cache's large
    # folios map up to 2 MiB per fault on newer kernels).
    sampler = RandomSampler(dataset, num_samples=len(dataset) // 4)
    loader = DataLoader(dataset, batch_size=4, sampler=sampler, num_workers=workers,
                        persistent_workers=persistent, prefetch_factor=2)
    ends = []
    for epoch in range(epochs):
        it = iter(loader)
        batches = len(loader)
        for n in range(batches):
            batch = next(it)
            float(batch.sum())
            time.sleep(0.01)  # the training step
            if n == batches - 1:
                # Every batch is consumed; the workers are idle (and still alive).
                pids = [w.pid for w in it._workers]
                ends.append({pid: file_rss_kb(pid, mapped) for pid in pids})
                loaderlens.mark(f"epoch {epoch} end", wait=True, timeout=10)
        del it
    with open(oracle, "w") as f:
        json.dump({"file": mapped, "epoch_ends": [{str(k): v for k, v in e.items()} for e in ends]},
                  f)


if __name__ == "__main__":
    main()
