# SPDX-License-Identifier: MIT
# Copy-on-read (pytorch/pytorch#13246) finished in the workers' first moments: the Dataset keeps
# its samples as a Python list of objects built before fork, and each worker walks the whole list
# in worker_init_fn, so every page holding an object is copied by the reference count writes
# before the recorder's first PSS reading of the worker. The control keeps the same samples in a
# numpy array. At the last batch, while the workers are idle and alive, the job reads each
# worker's Private_Dirty from /proc/PID/smaps_rollup (the oracle), marks the epoch and waits for
# the recorder's acknowledgement.
#
#   python3 copy_on_read.py list|numpy WORKERS ORACLE.json
import json
import os
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
# The package's marker protocol (python/loaderlens), from the source tree beside these tests.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import loaderlens  # noqa: E402

COUNT = 1_500_000  # about 100 MiB of str objects in a list


class Samples(Dataset):
    def __init__(self, kind):
        if kind == "list":
            self.items = [str(i).zfill(24) for i in range(COUNT)]
        else:
            self.items = np.arange(COUNT, dtype=np.int64)

    def __len__(self):
        return 4096

    def __getitem__(self, i):
        return torch.tensor(len(str(self.items[i])))


def touch_everything(worker_id):
    info = torch.utils.data.get_worker_info()
    count = 0
    for item in info.dataset.items:  # each item's reference count is written: its page copied
        count += 1
    return count


def private_dirty_kb(pid):
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith("Private_Dirty:"):
                return int(line.split()[1])
    return 0


def main():
    kind, workers, oracle = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    go = sys.argv[4] if len(sys.argv) > 4 else None
    loader = DataLoader(Samples(kind), batch_size=64, num_workers=workers,
                        worker_init_fn=touch_everything)
    it = iter(loader)
    batches = len(loader)
    ends = {}
    for n in range(batches):
        float(next(it).sum())
        time.sleep(0.02)  # the training step
        if go and n == workers - 1:  # a batch from each worker: every walk is over
            print("copied", flush=True)
            while not os.path.exists(go):
                time.sleep(0.01)  # waiting for the test's go-ahead
        if n == batches - 1:
            ends = {w.pid: private_dirty_kb(w.pid) for w in it._workers}
            loaderlens.mark("epoch 0 end", wait=True, timeout=10)
    del it
    with open(oracle, "w") as f:
        json.dump({"private_dirty_kb": {str(k): v for k, v in ends.items()}}, f)


if __name__ == "__main__":
    main()
