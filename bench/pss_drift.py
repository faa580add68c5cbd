# A still Python tree (main + 4 forked workers, each with 32 MiB of its own and a shared 64 MiB
# file mapped), SIGSTOPped so nothing in it moves: how far does its PSS move through processes
# outside it (the machine's other jobs starting and exiting) over 3 minutes? Σ PSS and each
# process's PSS against the first reading, every 5 s.
import mmap, os, signal, sys, time
path = "/var/tmp/pss-drift.bin"
with open(path, "wb") as f:
    f.write(os.urandom(64 << 20))
f = open(path, "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
own = bytearray(32 << 20)
for i in range(0, len(m), 4096):
    own[i // 2] = m[i]
pids = [os.getpid()]
r, w = os.pipe()
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        mine = bytearray(32 << 20)
        for i in range(0, len(m), 4096):
            mine[i // 2] = m[i]
        os.write(w, b"r")
        while True:
            signal.pause()
    pids.append(pid)
for _ in range(4):
    os.read(r, 1)
def pss(pid):
    for line in open(f"/proc/{pid}/smaps_rollup"):
        if line.startswith("Pss:"):
            return int(line.split()[1])
reader = os.fork()
if reader == 0:
    for p in pids:
        os.kill(p, signal.SIGSTOP)
    first = [pss(p) for p in pids]
    worst_sum = worst_one = 0.0
    seconds = int(sys.argv[1]) if len(sys.argv) > 1 else 180
    for t in range(0, seconds, 5):
        time.sleep(5)
        now = [pss(p) for p in pids]
        worst_sum = max(worst_sum, abs(sum(now) - sum(first)) / sum(first))
        worst_one = max(worst_one, max(abs(a - b) / b for a, b in zip(now, first)))
        print(f"t={t+5}s sum {sum(now)} KiB (first {sum(first)}), worst sum {worst_sum*100:.4f}% worst one {worst_one*100:.4f}%", flush=True)
    for p in pids:
        os.kill(p, signal.SIGKILL)
    os._exit(0)
os.waitpid(reader, 0)
