# SPDX-License-Identifier: MIT
# loaderlens.torch.track over DataLoaders whose length is unknown or wrong: an IterableDataset
# with uneven shards (worker 0 yields 1 item, worker 1 yields 40: PyTorch tells worker 0 to exit
# as soon as its shard is done, long before the pass ends), the same with a __len__ that
# overestimates, and persistent workers over 3 epochs. Each case is recorded by
# loaderlens.recording(); OUT (JSON) has each case's recording and worker PIDs, and what the job
# saw of the wrapper. Usage: iterable_epochs.py OUT.json
import copy
import json
import os
import sys
import time

from torch.utils.data import DataLoader, IterableDataset, get_worker_info

import loaderlens
import loaderlens.torch

LONG_SHARD = 40


class Uneven(IterableDataset):
    def __iter__(self):
        worker = get_worker_info().id
        for i in range(1 if worker == 0 else LONG_SHARD):
            time.sleep(0.005)  # the work of one item: worker 1 keeps going after worker 0 is done
            yield worker, os.getpid()


class UnevenWithEstimate(Uneven):
    def __len__(self):
        return LONG_SHARD + 20  # an estimate, too high: the pass ends before the count does


def one_pass(loader):
    pids = {}
    for batch in loader:
        for worker, pid in zip(batch[0].tolist(), batch[1].tolist()):
            pids[str(worker)] = pid
    return pids


def main():
    out = sys.argv[1]
    result = {}
    for name, dataset in (("unknown_length", Uneven()), ("estimated_length", UnevenWithEstimate())):
        loader = loaderlens.torch.track(DataLoader(dataset, batch_size=1, num_workers=2))
        with loaderlens.recording(path=f"{out}.{name}.db") as rec:
            pids = one_pass(loader)
        result[name] = {"recording": rec.path, "epochs": [{"epoch": 0, "workers": pids}]}

    loader = loaderlens.torch.track(DataLoader(Uneven(), batch_size=1, num_workers=2,
                                               persistent_workers=True))
    hooks = []
    with loaderlens.recording(path=f"{out}.persistent.db") as rec:
        epochs = []
        for epoch in range(3):
            epochs.append({"epoch": epoch, "workers": one_pass(loader)})
            hooks.append(id(loader.loader._iterator._shutdown_workers))
    result["persistent"] = {"recording": rec.path, "epochs": epochs,
                            "hooked_once": len(set(hooks)) == 1}

    plain = DataLoader(list(range(8)), batch_size=4, timeout=0)
    tracked = loaderlens.torch.track(plain)
    result["attributes"] = {"timeout": tracked.timeout, "batch_size": tracked.batch_size,
                            "copied_len": len(copy.copy(tracked)), "loader_is": tracked.loader is plain}
    for _ in range(2):
        list(loaderlens.torch.track(plain))  # wrapped again: the count goes on
    result["attributes"]["next_epoch"] = loaderlens.torch.track(plain).epoch
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
