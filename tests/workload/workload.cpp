// SPDX-License-Identifier: MIT
// loaderlens-test-workload: a process tree with known memory, for the integration tests and the
// README's first command until the reference loader lands.
//
// main maps nothing of the data file; it forks --workers W workers that each map FILE read-only,
// touch every page, allocate and write --anon-mib MiB of private memory, then hold. With
// --generations G the workers exit and are re-forked G times (like non-persistent DataLoader
// workers each epoch). Progress lines on stdout ("ready <gen>", "done") let a test synchronise;
// SIGUSR1 to main ends the hold of the current generation early. Each generation appends
// "epoch <gen>" to $LOADERLENS_MARKERS when it is set.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

volatile sig_atomic_t release_requested = 0;
volatile sig_atomic_t terminate_requested = 0;

struct Options {
    std::string file;
    int workers = 2;
    long anon_mib = 8;
    int generations = 1;
    long hold_ms = 1000;
    int grandchildren = 0; // each worker forks this many children that hold anon memory too
    int exit_code_on_term = 42;
};

void usage() {
    std::fprintf(stderr,
                 "usage: loaderlens-test-workload --file PATH [--workers W] [--anon-mib M] "
                 "[--generations G] [--hold-ms MS] [--grandchildren N] [--term-exit CODE]\n");
    std::exit(2);
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto next = [&]() -> const char* {
            if (i + 1 >= argc) usage();
            return argv[++i];
        };
        if (arg == "--file")
            o.file = next();
        else if (arg == "--workers")
            o.workers = std::atoi(next());
        else if (arg == "--anon-mib")
            o.anon_mib = std::atol(next());
        else if (arg == "--generations")
            o.generations = std::atoi(next());
        else if (arg == "--hold-ms")
            o.hold_ms = std::atol(next());
        else if (arg == "--grandchildren")
            o.grandchildren = std::atoi(next());
        else if (arg == "--term-exit")
            o.exit_code_on_term = std::atoi(next());
        else
            usage();
    }
    if (o.file.empty()) usage();
    return o;
}

void touch_anon(long mib) {
    const std::size_t bytes = static_cast<std::size_t>(mib) << 20;
    if (bytes == 0) return;
    // mmap, not malloc: exactly `bytes` of private anonymous memory, written so every page is real.
    void* anon = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (anon == MAP_FAILED) _exit(3);
    madvise(anon, bytes, MADV_NOHUGEPAGE);
    std::memset(anon, 0x5a, bytes);
}

[[noreturn]] void worker(const Options& o, int ready_fd) {
    int fd = open(o.file.c_str(), O_RDONLY);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0) _exit(4);
    const auto size = static_cast<std::size_t>(st.st_size);
    auto* data =
        static_cast<volatile unsigned char*>(mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0));
    if (data == MAP_FAILED) _exit(5);
    unsigned sum = 0;
    for (std::size_t off = 0; off < size; off += 4096)
        sum += data[off];
    touch_anon(o.anon_mib);
    for (int g = 0; g < o.grandchildren; ++g)
        if (fork() == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL); // die with the worker
            touch_anon(o.anon_mib);
            pause();
            _exit(0);
        }
    char byte = static_cast<char>(sum | 1);
    if (write(ready_fd, &byte, 1) != 1) _exit(6);
    pause(); // until main kills us at the end of the generation
    _exit(0);
}

} // namespace

int main(int argc, char** argv) {
    Options o = parse(argc, argv);
    struct sigaction on_release {};
    on_release.sa_handler = [](int) { release_requested = 1; };
    sigaction(SIGUSR1, &on_release, nullptr);
    struct sigaction on_term {};
    on_term.sa_handler = [](int) { terminate_requested = 1; };
    sigaction(SIGTERM, &on_term, nullptr);
    setvbuf(stdout, nullptr, _IOLBF, 0);
    const char* markers = std::getenv("LOADERLENS_MARKERS");

    for (int gen = 0; gen < o.generations && !terminate_requested; ++gen) {
        if (markers && *markers) {
            if (FILE* m = std::fopen(markers, "a")) {
                std::fprintf(m, "epoch %d\n", gen);
                std::fclose(m);
            }
        }
        int ready[2];
        if (pipe(ready) != 0) return 7;
        std::vector<pid_t> children;
        for (int w = 0; w < o.workers; ++w) {
            pid_t pid = fork();
            if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL); // never outlive main, even when it is killed
                close(ready[0]);
                signal(SIGTERM, SIG_DFL);
                signal(SIGUSR1, SIG_DFL);
                worker(o, ready[1]);
            }
            children.push_back(pid);
        }
        close(ready[1]);
        for (int w = 0; w < o.workers; ++w) {
            char byte;
            if (read(ready[0], &byte, 1) != 1) return 8;
        }
        close(ready[0]);
        std::printf("ready %d\n", gen);
        release_requested = 0;
        for (long waited = 0; waited < o.hold_ms && !release_requested && !terminate_requested;
             waited += 10)
            usleep(10'000);
        for (pid_t pid : children)
            kill(pid, SIGKILL);
        for (pid_t pid : children)
            waitpid(pid, nullptr, 0);
    }
    std::printf("done\n");
    return terminate_requested ? o.exit_code_on_term : 0;
}
