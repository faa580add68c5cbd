# SPDX-License-Identifier: MIT
# A training loop as a user writes it: np.load(mmap_mode="r") of a .npy, a DataLoader whose
# workers are forked anew for every epoch, a last step of 1 ms, and one line of loaderlens
# (`loaderlens.torch.track`). Writes what the job itself knows to OUT (JSON): each epoch's worker
# PIDs (from the batches: get_worker_info in the worker), batches per epoch, whether a recorder
# was there, and the worker names the workers saw.
# Usage: tracked_epochs.py DATA.npy OUT.json [EPOCHS] [WORKERS]
import json
import os
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

import loaderlens
import loaderlens.torch


class Rows(Dataset):
    def __init__(self, path):
        self.path = path
        self.data = np.load(path, mmap_mode="r")

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        with open(f"/proc/{os.getpid()}/comm") as f:
            comm = f.read().strip()
        row = torch.from_numpy(np.array(self.data[i]))
        return row, os.getpid(), get_worker_info().id, comm


def main():
    data, out = sys.argv[1], sys.argv[2]
    epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    workers = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    loader = loaderlens.torch.track(
        DataLoader(Rows(data), batch_size=64, num_workers=workers, persistent_workers=False,
                   collate_fn=lambda items: items),
        name_workers=True)
    seen = []
    for epoch in range(epochs):
        pids, names, batches = {}, {}, 0
        for batch in loader:
            for _, pid, worker, comm in batch:
                pids[worker] = pid
                names[worker] = comm
            batches += 1
            time.sleep(0.001)  # the training step: 1 ms, the last one too
        seen.append({"epoch": epoch, "batches": batches, "workers": pids, "names": names})
    with open(out, "w") as f:
        json.dump({"active": loaderlens.active(), "epochs": seen, "len": len(loader)}, f)


if __name__ == "__main__":
    main()
