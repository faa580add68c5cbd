#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The real PyTorch DataLoader over a .npy file, as the reference loader's baseline.

Run with Debian's python3 (python3-torch, python3-numpy). Mirrors `loaderlens load DATASET
--workers W --batch B --pattern P --prefetch 2 --read R`:

  * the Dataset maps the file once in __init__ (np.load(mmap_mode='r')), before the workers fork,
    as the reference loader maps it in main before forking;
  * __getitem__ returns the memmap row itself (--read mmap-view: default_collate's torch.stack then
    copies it into the batch's shared-memory storage, one copy per byte) or np.array() of it
    (--read mmap-copy: a private copy first, then the collate copy);
  * DataLoader(num_workers=W, batch_size=B, prefetch_factor=2, persistent_workers=False,
    pin_memory=False, drop_last=False), shuffle=True for 'shuffle' and False for 'sequential';
  * workers run with torch's own default of one intra-op thread (the worker loop calls
    torch.set_num_threads(1)); main is set to one thread as well.

The loop touches nothing in the batches unless --touch (then one element per 4 KiB page is read,
as the reference loader's stand-in for a training step does). Each epoch is timed twice with
time.perf_counter: from just before iter(loader) (forks the workers and sends the first
prefetch x W index batches) to the end of the iteration ("epoch_s"), and from just after iter()
returned ("after_start_s"): the reference loader's epoch time starts after its workers forked,
so "after_start" is the like-for-like figure. Prints one JSON object.
"""
import argparse
import json
import sys
import time
import warnings


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dataset", help=".npy file")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--pattern", choices=["shuffle", "sequential"], default="shuffle")
    p.add_argument("--read", choices=["mmap-view", "mmap-copy"], default="mmap-view")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--touch", action="store_true", help="read one element per page of each batch")
    a = p.parse_args()

    import numpy as np
    import torch
    from torch.utils.data import DataLoader, Dataset

    torch.set_num_threads(1)
    # torch.as_tensor on a read-only memmap warns once per worker ("not writable"): the tensor
    # is only read by torch.stack, so the warning is noise here.
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")

    class NpyDataset(Dataset):
        def __init__(self, path, copy):
            self.data = np.load(path, mmap_mode="r")
            self.copy = copy

        def __len__(self):
            return self.data.shape[0]

        def __getitem__(self, i):
            return np.array(self.data[i]) if self.copy else self.data[i]

    dataset = NpyDataset(a.dataset, a.read == "mmap-copy")
    generator = torch.Generator()
    generator.manual_seed(a.seed)
    kwargs = dict(num_workers=a.workers, batch_size=a.batch, shuffle=a.pattern == "shuffle",
                  generator=generator, pin_memory=False, drop_last=False)
    if a.workers > 0:
        kwargs.update(prefetch_factor=2, persistent_workers=False)
    loader = DataLoader(dataset, **kwargs)

    sample_bytes = dataset.data[0].nbytes
    page_elems = max(1, 4096 // dataset.data.itemsize)
    epochs = []
    checksum = 0.0
    for epoch in range(a.epochs):
        t0 = time.perf_counter()
        it = iter(loader)
        t1 = time.perf_counter()
        samples = batches = 0
        for batch in it:
            samples += batch.shape[0]
            batches += 1
            if a.touch:
                checksum += float(batch.reshape(-1)[::page_elems].sum())
        t2 = time.perf_counter()
        del it  # joins the workers (not timed, as the reference loader's stop is not)
        epochs.append({
            "epoch": epoch, "samples": samples, "batches": batches,
            "epoch_s": t2 - t0, "after_start_s": t2 - t1,
            "samples_per_s": samples / (t2 - t0),
            "after_start_samples_per_s": samples / (t2 - t1),
            "mib_per_s": samples * sample_bytes / (1 << 20) / (t2 - t0),
        })
    json.dump({"loader": "torch.utils.data.DataLoader", "torch": torch.__version__,
               "numpy": np.__version__, "dataset": a.dataset, "records": len(dataset),
               "record_bytes": sample_bytes, "workers": a.workers, "batch": a.batch,
               "pattern": a.pattern, "read": a.read, "touch": a.touch, "checksum": checksum,
               "epochs": epochs}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
