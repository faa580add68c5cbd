# SPDX-License-Identifier: MIT
"""Epoch markers and worker names for ``torch.utils.data.DataLoader`` (docs/python.md).

    loader = loaderlens.torch.track(DataLoader(dataset, num_workers=4))
    for epoch in range(epochs):
        for batch in loader:      # "epoch N start" / "epoch N end" are marked by themselves
            step(batch)

torch itself is never imported here: the wrapper works with any object that iterates like a
DataLoader, and importing loaderlens costs no torch import.
"""

import ctypes
import weakref

from . import DEFAULT_TIMEOUT, _markers, epoch_end, epoch_start, mark

# Epochs counted per DataLoader, so that wrapping the same loader again (inside the epoch loop)
# continues the count instead of marking every pass "epoch 0".
_epochs_of = weakref.WeakKeyDictionary()
_epochs_by_id = {}  # loaders that cannot be weakly referenced


class TrackedLoader:
    """Iterates like the DataLoader it wraps; marks each pass as an epoch.

    The end is marked, and waited for, while the pass's workers are still alive: when the loop
    asks for the batch after the last one (the DataLoader ends non-persistent workers in that
    call), or just before PyTorch's iterator ends them, whichever comes first (a loader of
    unknown or estimated length). A worker told to exit early, its shard of an IterableDataset
    done, is sampled first. Everything else (len, attributes such as ``sampler``, ``dataset``,
    ``timeout``) is the DataLoader's.
    """

    def __init__(self, loader, first_epoch=None, wait=True, timeout=DEFAULT_TIMEOUT):
        # Names of our own that no DataLoader attribute has (its `timeout` must show through).
        self._ll_loader = loader
        self._ll_wait = wait
        self._ll_timeout = timeout
        if first_epoch is not None:
            self._store_next_epoch(int(first_epoch))

    @property
    def loader(self):
        """The DataLoader this wraps."""
        return self._ll_loader

    def _next_epoch(self):
        try:
            return _epochs_of.get(self._ll_loader, 0)
        except TypeError:
            return _epochs_by_id.get(id(self._ll_loader), 0)

    def _store_next_epoch(self, epoch):
        try:
            _epochs_of[self._ll_loader] = epoch
        except TypeError:
            _epochs_by_id[id(self._ll_loader)] = epoch

    @property
    def epoch(self):
        """The number the next pass will be marked with."""
        return self._next_epoch()

    def __len__(self):
        return len(self._ll_loader)

    def __getattr__(self, name):
        # Our own names and dunders are never the DataLoader's (copy.copy looks them up on an
        # instance without its fields yet).
        if name.startswith("_ll_") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._ll_loader, name)

    def __iter__(self):
        epoch = self._next_epoch()
        self._store_next_epoch(epoch + 1)
        wait, timeout = self._ll_wait, self._ll_timeout  # the hooks hold these, never self
        # iter() starts the pass's workers (forked anew unless persistent): the start marker's
        # sample then sees them before they copy much of the main process.
        batches = iter(self._ll_loader)
        epoch_start(epoch)
        ended = False

        def end():
            nonlocal ended
            if not ended:
                ended = True
                epoch_end(epoch, wait=wait, timeout=timeout)

        def worker_done(worker_id):
            if not ended:
                mark(f"worker {worker_id} done in epoch {epoch}", wait=wait, timeout=timeout)

        _hook_iterator(batches, end, worker_done)
        try:
            length = len(self._ll_loader)
        except TypeError:
            length = None
        taken = 0
        try:
            while True:
                if length is not None and taken >= length:
                    end()  # the last batch's step is done; the workers are still there
                try:
                    batch = next(batches)
                except StopIteration:
                    break
                taken += 1
                yield batch
            end()
        finally:
            # A loop left early (break, an exception) ends its epoch there; `batches` is still
            # held, so its workers are too.
            end()
            _unhook_pass(batches)


def _hook_iterator(batches, end, worker_done):
    """Where PyTorch's multi-process iterator ends workers, mark first: ``_shutdown_workers``
    (every worker, at the end of a pass whose length was unknown or wrong) and
    ``_mark_worker_as_unavailable`` (one worker whose IterableDataset shard is done, told to
    exit while the others go on). Hooked once per iterator (a persistent one serves every
    epoch); the hooks call this pass's functions, set here, and hold the iterator weakly (a
    cycle would keep a finished iterator, and its workers, until the garbage collector ran)."""
    try:
        batches._ll_end, batches._ll_worker_done = end, worker_done
    except (AttributeError, TypeError):
        return  # not an object we can hook (a plain iterator): the length and the end suffice
    if getattr(batches, "_ll_hooked", False):
        return
    cls, iterator = type(batches), weakref.ref(batches)
    shutdown = getattr(cls, "_shutdown_workers", None)
    release = getattr(cls, "_mark_worker_as_unavailable", None)
    if callable(shutdown):
        def mark_then_shutdown(*args, **kwargs):
            it = iterator()
            if it is None:
                return None
            if it._ll_end is not None:
                it._ll_end()
            return shutdown(it, *args, **kwargs)

        batches._shutdown_workers = mark_then_shutdown
    if callable(release):
        def sample_then_release(worker_id, shutdown=False):
            it = iterator()
            if it is None:
                return None
            if not shutdown and it._ll_worker_done is not None:
                it._ll_worker_done(worker_id)
            return release(it, worker_id, shutdown)

        batches._mark_worker_as_unavailable = sample_then_release
    batches._ll_hooked = True


def _unhook_pass(batches):
    try:
        batches._ll_end = batches._ll_worker_done = None
    except (AttributeError, TypeError):
        pass


def track(loader, first_epoch=None, wait=True, timeout=DEFAULT_TIMEOUT, name_workers=False,
          sample_new_workers=False):
    """Wraps ``loader`` so that each pass over it is marked as an epoch (see TrackedLoader).

    ``first_epoch`` sets the number of the next pass (default: continue this loader's count,
    from 0). With ``name_workers`` (True or a prefix), the loader's workers name themselves
    ``loader-w0``, ``loader-w1``, ... With ``sample_new_workers``, each new worker waits, before
    it loads anything, until the recorder has sampled it: its first PSS reading then precedes
    whatever it copies (copy_on_read is judged from that reading), at the cost of up to a few
    hundred ms per worker start; meant for memory tests. Both chain the loader's own
    ``worker_init_fn`` (see ``worker_init_fn``).
    """
    if name_workers or sample_new_workers:
        prefix = name_workers if isinstance(name_workers, str) else DEFAULT_PREFIX
        current = getattr(loader, "worker_init_fn", None)
        if isinstance(current, _WorkerInit):
            current = current.chained
        loader.worker_init_fn = worker_init_fn(current, prefix=prefix if name_workers else None,
                                               sample=sample_new_workers, timeout=timeout)
    return TrackedLoader(loader, first_epoch, wait, timeout)


DEFAULT_PREFIX = "loader-w"
_PR_SET_NAME = 15  # linux/prctl.h
_TASK_COMM_BYTES = 15  # the kernel keeps 15 bytes of a thread's name
_libc = None


def set_process_name(name):
    """Sets this thread's name (comm), as ``top``, ``ps -o comm`` and the recorder show it.
    Returns False where the C library cannot be reached."""
    global _libc
    try:
        # The running program's own symbols, libc's among them: ctypes.util.find_library would
        # run `ldconfig -p` in every worker, a process in the recorded tree.
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        encoded = name.encode("utf-8", "replace")[:_TASK_COMM_BYTES]
        return _libc.prctl(_PR_SET_NAME, ctypes.c_char_p(encoded), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


class _WorkerInit:
    """A picklable ``worker_init_fn`` (the spawn start method pickles it)."""

    def __init__(self, chained, prefix, sample, timeout):
        self.chained = chained
        self.prefix = prefix
        self.sample = sample
        self.timeout = timeout

    def __getstate__(self):
        # Pickled in main for a spawned worker, which starts with a fresh package: a recorder
        # that left main's last wait unanswered is not waited for in every new worker again.
        state = dict(self.__dict__)
        state["sample"] = self.sample and not _markers.unanswered()
        return state

    def __call__(self, worker_id):
        if self.prefix:
            set_process_name(f"{self.prefix}{worker_id}")
        if self.sample:
            mark(f"worker {worker_id} started", wait=True, timeout=self.timeout)
        if self.chained is not None:
            self.chained(worker_id)


def worker_init_fn(chained=None, prefix=DEFAULT_PREFIX, sample=False, timeout=DEFAULT_TIMEOUT):
    """A ``worker_init_fn`` that names each worker by its slot (``loader-w3``; ``prefix=None``:
    unnamed), with ``sample`` waits for the recorder's first sample of it, then calls
    ``chained(worker_id)``, the user's own, if given::

        DataLoader(ds, num_workers=4, worker_init_fn=loaderlens.torch.worker_init_fn(my_init))
    """
    return _WorkerInit(chained, prefix, sample, timeout)
