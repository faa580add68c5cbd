# SPDX-License-Identifier: MIT
# A PyTorch DataLoader whose processes move one another's PSS without moving their own memory:
# the dataset's Python objects are built in main before the fork, and every worker's reads of them
# write their reference counts (copy-on-write: main's PSS and the other workers' rise while main
# stands still); the workers are born and end every epoch (each birth halves what main shares,
# each exit gives it back); the rows come from an np.load(mmap_mode="r") .npy the workers fault in.
# Runs epochs until STOP exists, so that the test decides how many moments it looks at.
#
#   python3 pss_moments.py DATA.npy STOP WORKERS
import os
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Rows(Dataset):
    def __init__(self, path):
        self.rows = np.load(path, mmap_mode="r")
        self.names = [f"sample-{i:08d}" for i in range(300_000)]

    def __len__(self):
        return self.rows.shape[0]

    def __getitem__(self, index):
        start = (index * 997) % len(self.names)
        touched = sum(len(name) for name in self.names[start : start + 2000])
        time.sleep(0.002)
        return torch.from_numpy(np.array(self.rows[index])), touched


def main():
    path, stop, workers = sys.argv[1:4]
    loader = DataLoader(Rows(path), batch_size=16, shuffle=True, num_workers=int(workers))
    epochs = 0
    while not os.path.exists(stop):
        for _ in loader:
            if os.path.exists(stop):
                break
        epochs += 1
    print(f"epochs {epochs}")


if __name__ == "__main__":
    main()
