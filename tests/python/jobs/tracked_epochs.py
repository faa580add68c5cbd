# SPDX-License-Identifier: MIT
# A training loop as a user writes it: np.load(mmap_mode="r") of a .npy, a DataLoader whose
# workers are forked anew for every epoch, a last step of 1 ms, and one line of loaderlens
# (`loaderlens.torch.track`). Writes what the job itself knows to OUT (JSON): each epoch's worker
# PIDs (from the batches: get_worker_info in the worker), batches per epoch, whether a recorder
# was there, and the worker names the workers saw (with a note where the user's own
# worker_init_fn, which track must chain, did not run).
# Usage: tracked_epochs.py DATA.npy OUT.json [EPOCHS] [WORKERS] [RUNS]
import json
import os
import sys
import time

import numpy as np
from torch.utils.data import DataLoader, Dataset, get_worker_info

import loaderlens
import loaderlens.torch


# Set in each worker by the user's own worker_init_fn, which track(name_workers=True) must chain.
user_init_ran_for = None


def user_init(worker_id):
    global user_init_ran_for
    user_init_ran_for = worker_id


class Rows(Dataset):
    def __init__(self, path):
        self.path = path
        self.data = np.load(path, mmap_mode="r")

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        # The name as the worker's process has it once its worker_init_fn ran.
        with open("/proc/self/comm") as f:
            comm = f.read().strip()
        # A copy of the row as a numpy array: pickled through the worker's queue by value (a
        # tensor would go through a shared-memory file of its own per row).
        worker = get_worker_info().id
        name = comm if user_init_ran_for == worker else f"{comm} (user's init not run)"
        return np.array(self.data[i]), os.getpid(), worker, name


def epochs_of(loader, epochs):
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
    return seen


def main():
    data, out = sys.argv[1], sys.argv[2]
    epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    workers = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    # RUNS: that many runs in this process (torch imported once), each recorded on its own by
    # loaderlens.recording() to OUT.runN.db; without it, the run is recorded (or not) from outside.
    runs = int(sys.argv[5]) if len(sys.argv) > 5 else 0

    def loader():
        return loaderlens.torch.track(
            DataLoader(Rows(data), batch_size=64, num_workers=workers, persistent_workers=False,
                       collate_fn=lambda items: items, worker_init_fn=user_init),
            name_workers=True)

    result = {"active": loaderlens.active(), "runs": []}
    if runs == 0:
        tracked = loader()
        result["runs"].append({"epochs": epochs_of(tracked, epochs), "len": len(tracked)})
    for run in range(runs):
        tracked = loader()
        with loaderlens.recording(path=f"{out}.run{run}.db") as recording:
            active = loaderlens.active()
            seen = epochs_of(tracked, epochs)
        result["runs"].append({"epochs": seen, "len": len(tracked), "active": active,
                               "recording": recording.path})
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
