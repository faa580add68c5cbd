// SPDX-License-Identifier: MIT
// The system tier's /proc/meminfo figures (through libproc2): against /proc/meminfo read here,
// fresh at every reading, and empty (never 0) where the kernel's meminfo has no such line.
#include "loaderlens/system_sampler.hpp"
#include "precondition.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sched.h>
#include <sstream>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace loaderlens;
using namespace loaderlens::test;

namespace {

// /proc/meminfo as name -> KiB, parsed here (the oracle shares no code with the sampler).
std::map<std::string, std::int64_t> meminfo_directly() {
    std::map<std::string, std::int64_t> fields;
    std::ifstream in("/proc/meminfo");
    for (std::string line; std::getline(in, line);) {
        const std::size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::istringstream value(line.substr(colon + 1));
        std::int64_t kb = 0;
        if (value >> kb) fields[line.substr(0, colon)] = kb;
    }
    return fields;
}

struct Figure {
    const char* name;
    Kib SystemSample::*field;
};
const Figure figures[] = {
    {"MemTotal", &SystemSample::mem_total},
    {"MemAvailable", &SystemSample::mem_available},
    {"Cached", &SystemSample::cached},
    {"Shmem", &SystemSample::shmem},
    {"Dirty", &SystemSample::dirty},
    {"Active(file)", &SystemSample::active_file},
    {"Inactive(file)", &SystemSample::inactive_file},
    {"Writeback", &SystemSample::writeback},
    {"KReclaimable", &SystemSample::kreclaimable},
};

} // namespace

BOOST_AUTO_TEST_SUITE(system_sampler)

// Each figure lies between two direct readings taken around the sampler's, widened by 1 MiB for
// what the rest of the machine does meanwhile (MemTotal exactly); a line this kernel does not
// have must give an empty figure.
BOOST_AUTO_TEST_CASE(meminfo_figures_against_proc_meminfo) {
    SystemSampler sampler;
    const auto before = meminfo_directly();
    const SystemSample sample = sampler.read();
    const auto after = meminfo_directly();
    for (const Figure& figure : figures) {
        const Kib& value = sample.*figure.field;
        BOOST_TEST_CONTEXT(figure.name << " = " << value.value_or(-1) << " KiB") {
            if (!before.contains(figure.name)) {
                BOOST_TEST(!value.has_value());
                continue;
            }
            const std::int64_t a = before.at(figure.name), b = after.at(figure.name);
            BOOST_REQUIRE(value.has_value());
            const std::int64_t slack = std::string(figure.name) == "MemTotal" ? 0 : mib_kb;
            BOOST_TEST(*value >= std::min(a, b) - slack);
            BOOST_TEST(*value <= std::max(a, b) + slack);
        }
    }
    // This project's kernels (Debian 12's 6.1 and later) have every one of them.
    BOOST_TEST(sample.kreclaimable.has_value());
    BOOST_TEST(sample.active_file.has_value());
}

// Two readings a moment apart see an 8 MiB file written to /dev/shm in between: each reading
// reads /proc/meminfo again (libproc2's procps_meminfo_get would serve the same second's values).
BOOST_AUTO_TEST_CASE(each_reading_is_fresh) {
    const std::string path = "/dev/shm/loaderlens-test-" + std::to_string(getpid()) + "-meminfo";
    struct Remove {
        std::string path;
        ~Remove() { unlink(path.c_str()); }
    } remove_file{path};
    SystemSampler sampler;
    const SystemSample first = sampler.read();
    make_file(path, 8u << 20);
    const SystemSample second = sampler.read();
    BOOST_REQUIRE(first.shmem && second.shmem);
    BOOST_TEST_MESSAGE("Shmem " << *first.shmem << " -> " << *second.shmem << " KiB");
    BOOST_TEST(std::abs(*second.shmem - *first.shmem - 8 * mib_kb) <= mib_kb);
}

// A meminfo without MemAvailable, Writeback and KReclaimable (an old kernel's, or a container's
// lxcfs view), bind-mounted over /proc/meminfo in a mount namespace of a child: those figures
// are empty, not 0 and not MemFree (what libproc2 puts in a missing MemAvailable); the others
// are exactly the file's.
BOOST_AUTO_TEST_CASE(a_line_the_kernel_does_not_have_is_empty, *LOADERLENS_MAY_SKIP) {
    if (!precondition(geteuid() == 0, "needs root to mount over /proc/meminfo", InCi::must_have))
        return;
    TempDir dir;
    const std::string fake = dir.file("meminfo");
    std::ofstream(fake) << "MemTotal:        1000000 kB\n"
                           "MemFree:          400000 kB\n"
                           "Cached:           300000 kB\n"
                           "Active(file):     120000 kB\n"
                           "Inactive(file):   130000 kB\n"
                           "Dirty:                12 kB\n"
                           "Shmem:              5000 kB\n";
    int pipe_fds[2];
    BOOST_REQUIRE(pipe(pipe_fds) == 0);
    const pid_t pid = fork();
    if (pid == 0) {
        close(pipe_fds[0]);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (unshare(CLONE_NEWNS) != 0 ||
            mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
            mount(fake.c_str(), "/proc/meminfo", nullptr, MS_BIND, nullptr) != 0) {
            const std::string error = std::string("mount: ") + std::strerror(errno) + "\n";
            (void)!write(pipe_fds[1], error.data(), error.size());
            _exit(1);
        }
        const SystemSample s = SystemSampler().read();
        std::string out;
        for (const Figure& figure : figures) {
            const Kib& value = s.*figure.field;
            out += std::string(figure.name) + " " +
                   (value ? std::to_string(*value) : std::string("none")) + "\n";
        }
        (void)!write(pipe_fds[1], out.data(), out.size());
        _exit(0);
    }
    ForkGuard child(pid);
    close(pipe_fds[1]);
    std::string text;
    char buffer[512];
    for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) > 0;)
        text.append(buffer, static_cast<std::size_t>(n));
    close(pipe_fds[0]);
    const int status = child.reap();
    BOOST_REQUIRE_MESSAGE(WIFEXITED(status) && WEXITSTATUS(status) == 0, text);
    BOOST_TEST(text == "MemTotal 1000000\n"
                       "MemAvailable none\n"
                       "Cached 300000\n"
                       "Shmem 5000\n"
                       "Dirty 12\n"
                       "Active(file) 120000\n"
                       "Inactive(file) 130000\n"
                       "Writeback none\n"
                       "KReclaimable none\n");
}

BOOST_AUTO_TEST_SUITE_END()
