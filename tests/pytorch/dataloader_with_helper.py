# SPDX-License-Identifier: MIT
# A real PyTorch job as users write them: a helper started with subprocess before the DataLoader
# (a metrics sampler here; wandb, tensorboard or compile workers in real jobs), then a DataLoader
# with W workers over a memory-mapped .npy for E epochs. Run under `loaderlens record`; the test
# checks which processes the recorder took for workers.
#
#   python3 dataloader_with_helper.py DATA.npy WORKERS EPOCHS START_METHOD PERSISTENT
import subprocess
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class MappedRows(Dataset):
    def __init__(self, path):
        self.path = path
        self.rows = None
        self.length = np.load(path, mmap_mode="r").shape[0]

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        if self.rows is None:  # opened in each worker, after fork or spawn
            self.rows = np.load(self.path, mmap_mode="r")
        time.sleep(0.002)  # a little work per sample, so that the recorder sees the workers
        return torch.from_numpy(np.array(self.rows[index]))


def main():
    path, workers, epochs, start_method, persistent = sys.argv[1:6]
    helper = subprocess.Popen(
        [sys.executable, "-c", "import time\nwhile True: time.sleep(0.05)"]
    )
    loader = DataLoader(
        MappedRows(path),
        batch_size=16,
        shuffle=True,
        num_workers=int(workers),
        multiprocessing_context=start_method,
        persistent_workers=persistent == "1",
    )
    total = 0
    for _ in range(int(epochs)):
        for batch in loader:
            total += batch.shape[0]
    helper.terminate()
    helper.wait()
    print(f"samples {total}")


if __name__ == "__main__":
    main()
