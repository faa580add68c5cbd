// SPDX-License-Identifier: MIT
// What one fast-tier tick costs at N members, as ratios to the floor: pread of N kept-open
// statm files. Forks a main with N sleeping children, then, at 10 Hz (ticks 100 ms apart, so
// caches are as cold as in a recorder), times in turn the statm floor, TreeTracker::scan(),
// FastSampler::sample() and the reads a tick could be built from (the /proc listing, the members'
// children lists and stat files, one poll() of their pidfds). Usage: loaderlens_bench_fast_tick
// [N]; OLD=1 lets the members settle (3 s) before timing. Figures in docs/benchmarks-sampling.md.
#include "loaderlens/fast_sampler.hpp"
#include "loaderlens/proc_text.hpp"
#include "loaderlens/tree_tracker.hpp"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <functional>
#include <poll.h>
#include <signal.h>
#include <string>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>
using namespace loaderlens;
static long long cpu_ns() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}
static double per_call_us(int reps, const std::function<void()>& f) {
    f();
    long long best = 1LL << 62;
    for (int r = 0; r < 5; ++r) {
        long long s = cpu_ns();
        for (int i = 0; i < reps; ++i)
            f();
        best = std::min(best, cpu_ns() - s);
    }
    return best / 1000.0 / reps;
}
int main(int argc, char** argv) {
    int n = argc > 1 ? atoi(argv[1]) : 64;
    int pipefd[2];
    pipe(pipefd);
    pid_t main_pid = fork();
    if (main_pid == 0) {
        for (int i = 0; i < n; ++i)
            if (fork() == 0) {
                close(pipefd[1]);
                char c;
                read(pipefd[0], &c, 1);
                _exit(0);
            }
        close(pipefd[1]);
        char c;
        read(pipefd[0], &c, 1);
        while (wait(nullptr) > 0) {
        }
        _exit(0);
    }
    close(pipefd[0]);
    // wait until n children exist
    for (;;) {
        std::string t;
        auto s = read_text_file("/proc/" + std::to_string(main_pid) + "/task/" +
                                std::to_string(main_pid) + "/children");
        int cnt = 0;
        if (s)
            for (char ch : *s)
                cnt += ch == ' ';
        if (cnt >= n) break;
        usleep(10000);
    }
    RecordingClock clock;
    TrackerOptions opt;
    opt.scan_root = main_pid;
    opt.main_pid = main_pid;
    TreeTracker tracker(opt, clock);
    tracker.scan();
    tracker.scan();
    if (getenv("OLD")) sleep(4);
    tracker.scan();
    auto live = tracker.live();
    std::vector<int> statm, stat, children, pidfds;
    for (auto& p : live) {
        std::string base = "/proc/" + std::to_string(p.key.pid);
        statm.push_back(open((base + "/statm").c_str(), O_RDONLY));
        stat.push_back(open((base + "/stat").c_str(), O_RDONLY));
        children.push_back(
            open((base + "/task/" + std::to_string(p.key.pid) + "/children").c_str(), O_RDONLY));
        pidfds.push_back(syscall(434, p.key.pid, 0));
    }
    std::string buf;
    double base64 = per_call_us(200, [&] {
        for (int fd : statm)
            pread_whole(fd, buf);
    });
    printf("members %zu, processes on machine %zu\n", live.size(), tracker.processes_on_machine());
    printf("baseline pread statm x%zu: %.1f us\n", statm.size(), base64);
    auto row = [&](const char* name, double us) {
        printf("%-40s %8.1f us  %5.2fx\n", name, us, us / base64);
    };
    row("pread stat xN", per_call_us(200, [&] {
            for (int fd : stat)
                pread_whole(fd, buf);
        }));
    row("pread+parse stat xN", per_call_us(200, [&] {
            for (int fd : stat) {
                pread_whole(fd, buf);
                parse_stat(buf);
            }
        }));
    row("pread children xN", per_call_us(200, [&] {
            for (int fd : children)
                pread_whole(fd, buf);
        }));
    row("poll pidfds xN", per_call_us(200, [&] {
            std::vector<pollfd> p;
            for (int fd : pidfds)
                p.push_back({fd, POLLIN, 0});
            poll(p.data(), p.size(), 0);
        }));
    row("readdir /proc", per_call_us(200, [&] {
            DIR* d = opendir("/proc");
            while (readdir(d)) {
            }
            closedir(d);
        }));
    row("tracker.scan()", per_call_us(200, [&] { tracker.scan(); }));
    {
        long long total = 0;
        int reps = 30;
        for (int i = 0; i < reps; ++i) {
            usleep(100000);
            long long s0 = cpu_ns();
            tracker.scan();
            total += cpu_ns() - s0;
        }
        row("tracker.scan() at 10 Hz, 3 s", total / 1000.0 / reps);
    }
    {
        // One 100 ms tick after another, each part timed in turn: caches as cold as in a recorder.
        FastSampler fs2;
        std::vector<FastSample> out2;
        Problems pr2;
        std::int64_t now2 = 0;
        const char* names[] = {
            "statm xN (baseline)", "scan",        "fast sampler", "readdir /proc",
            "children xN",         "poll pidfds", "stat xN"};
        long long t[7] = {};
        int reps = 40;
        long long maxscan = 0;
        for (int i = 0; i < reps; ++i) {
            usleep(100000);
            long long s0 = cpu_ns();
            for (int fd : statm)
                pread_whole(fd, buf);
            long long s1 = cpu_ns();
            tracker.scan();
            long long s2 = cpu_ns();
            out2.clear();
            now2 += 100;
            fs2.sample(live, now2, out2, pr2);
            long long s3 = cpu_ns();
            {
                DIR* d = opendir("/proc");
                while (readdir(d)) {
                }
                closedir(d);
            }
            long long s4 = cpu_ns();
            for (int fd : children)
                pread_whole(fd, buf);
            long long s5 = cpu_ns();
            {
                std::vector<pollfd> p;
                for (int fd : pidfds)
                    p.push_back({fd, POLLIN, 0});
                poll(p.data(), p.size(), 0);
            }
            long long s6 = cpu_ns();
            for (int fd : stat) {
                pread_whole(fd, buf);
                parse_stat(buf);
            }
            long long s7 = cpu_ns();
            long long d[] = {s1 - s0, s2 - s1, s3 - s2, s4 - s3, s5 - s4, s6 - s5, s7 - s6};
            for (int k = 0; k < 7; ++k)
                t[k] += d[k];
            if (d[1] > maxscan) maxscan = d[1];
        }
        printf("-- at 10 Hz (sleep 100 ms between ticks), %d ticks, mean CPU per tick:\n", reps);
        for (int k = 0; k < 7; ++k)
            printf("%-40s %8.1f us  %5.2fx\n", names[k], t[k] / 1000.0 / reps, double(t[k]) / t[0]);
        printf("longest scan tick %.1f us\n", maxscan / 1000.0);
    }
    FastSampler fs;
    std::vector<FastSample> out;
    Problems pr;
    std::int64_t now = 0;
    row("fast sampler (status every 10th)", per_call_us(200, [&] {
            out.clear();
            now += 100;
            fs.sample(live, now, out, pr);
        }));
    row("tracker.live()", per_call_us(200, [&] { auto l = tracker.live(); }));
    close(pipefd[1]);
    waitpid(main_pid, nullptr, 0);
}
