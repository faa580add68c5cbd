# SPDX-License-Identifier: MIT
# The setup of user report 000 (../shared/seeds/000_*): a Dataset that maps its .npy with
# np.load(mmap_mode=...) in __init__ (before the workers fork), random_split 80/20, a shuffled
# DataLoader with 5 workers (re-forked each epoch), and no epoch markers, as in the report.
# With "freeze", main calls gc.freeze() before the workers start: a full garbage collection in a
# worker then no longer copies main's objects (24 MiB per worker, docs/findings.md), so that
# whether one happens cannot change what is measured.
#
#   python3 seed000_mmap.py DATA.npy EPOCHS STEP_SECONDS [freeze]
import gc
import sys
import time
import warnings

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, random_split


class El80Dataset(Dataset):
    def __init__(self, x_data_path):
        self.my_mult = 1.17
        self.x_data = np.load(x_data_path, mmap_mode="r")  # the report used "r+"

    def __len__(self):
        return self.x_data.shape[0]

    def __getitem__(self, idx):
        x_samp = self.my_mult * torch.tensor(self.x_data[idx, None, :])
        return torch.log(x_samp.abs() + 1)


def main():
    path, epochs, step = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    freeze = sys.argv[4:] == ["freeze"]
    warnings.filterwarnings("ignore", message=".*worker processes in total.*")  # 2-core CI
    torch.manual_seed(0)
    spec_ds = El80Dataset(path)
    train_len = int(0.8 * len(spec_ds))
    train_ds, _ = random_split(spec_ds, [train_len, len(spec_ds) - train_len])
    train_dl = DataLoader(train_ds, batch_size=100, shuffle=True, num_workers=5)
    if freeze:
        gc.freeze()
    for _ in range(epochs):
        total = 0.0
        for batch in train_dl:
            total += float(batch.sum())
            time.sleep(step)  # the training step
    print("done", total)


if __name__ == "__main__":
    main()
