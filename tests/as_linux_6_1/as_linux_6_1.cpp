// SPDX-License-Identifier: MIT
// Runs a command as on Debian 12's stock kernel, Linux 6.1, as far as the residency tier can tell:
// a seccomp filter answers cachestat(2) with ENOSYS (it came in 6.5) and the PAGEMAP_SCAN ioctl
// with ENOTTY (6.7; on 6.1 the pagemap file has no ioctl at all). The test binary's residency
// suites run under it (ctest entry residency_as_linux_6_1), so the probes' own choice of their
// fallbacks is tested on every kernel. x86-64.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fcntl.h>
#include <iterator>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace {

struct PmScanArg { // include/uapi/linux/fs.h (Linux 6.7): 12 u64
    std::uint64_t fields[12];
};

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s COMMAND [ARGS...]\n", argv[0]);
        return 2;
    }
    constexpr std::uint32_t cachestat_nr = 451;
    const auto pagemap_scan = static_cast<std::uint32_t>(_IOWR('f', 16, PmScanArg));
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, cachestat_nr, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[1])), // low half
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, pagemap_scan, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOTTY),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
        std::perror("as_linux_6_1: seccomp");
        return 1;
    }
    // The filter answers as it should (else the tests would quietly run as on this kernel).
    std::uint64_t range[2] = {0, 0}, stats[5] = {};
    const bool no_cachestat = ::syscall(cachestat_nr, 0, range, stats, 0) == -1 && errno == ENOSYS;
    PmScanArg arg{};
    const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    const bool no_scan = fd >= 0 && ::ioctl(fd, pagemap_scan, &arg) == -1 && errno == ENOTTY;
    if (fd >= 0) ::close(fd);
    if (!no_cachestat || !no_scan) {
        std::fprintf(stderr, "as_linux_6_1: the filter does not answer as Linux 6.1\n");
        return 1;
    }
    ::execvp(argv[1], argv + 1);
    std::perror("as_linux_6_1: exec");
    return 127;
}
