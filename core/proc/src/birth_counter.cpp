// SPDX-License-Identifier: MIT
#include "loaderlens/birth_counter.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace loaderlens {

namespace {

bool send_op(int socket, proc_cn_mcast_op op) {
    // nlmsghdr, cn_msg, then the operation (cn_msg ends in a flexible array: no struct holds it).
    constexpr std::size_t size = sizeof(nlmsghdr) + sizeof(cn_msg) + sizeof(proc_cn_mcast_op);
    alignas(nlmsghdr) char request[size] = {};
    auto* header = reinterpret_cast<nlmsghdr*>(request);
    header->nlmsg_len = size;
    header->nlmsg_type = NLMSG_DONE;
    header->nlmsg_pid = static_cast<__u32>(getpid());
    auto* message = reinterpret_cast<cn_msg*>(request + sizeof(nlmsghdr));
    message->id = {CN_IDX_PROC, CN_VAL_PROC};
    message->len = sizeof(proc_cn_mcast_op);
    std::memcpy(message->data, &op, sizeof op);
    return ::send(socket, request, size, 0) == static_cast<ssize_t>(size);
}

// The events name processes by the initial namespace's PIDs: in another PID namespace they would
// be matched against the wrong processes. NSpid lists one PID per namespace level.
bool in_initial_pid_namespace() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("NSpid:", 0) == 0) return line.find_first_of(" \t", 7) == std::string::npos;
    return true;
}

// The event a netlink message carries, copied out: it starts 36 bytes into the message, where
// its 64-bit fields are misaligned (UBSan: "misaligned address"). False for a short message.
bool event_of(const nlmsghdr* header, proc_event& event) {
    if (header->nlmsg_len < NLMSG_LENGTH(sizeof(cn_msg))) return false;
    const auto* message = static_cast<const cn_msg*>(NLMSG_DATA(header));
    const std::size_t room = header->nlmsg_len - NLMSG_LENGTH(sizeof(cn_msg));
    event = {};
    std::memcpy(&event, message->data, std::min<std::size_t>({message->len, room, sizeof event}));
    return true;
}

} // namespace

BirthCounter::BirthCounter() {
    if (!in_initial_pid_namespace()) {
        problem_ = "the recorder runs in a PID namespace, and the kernel's process events name "
                   "processes by the host's PIDs";
        return;
    }
    socket_ = ::socket(PF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
    sockaddr_nl address{};
    address.nl_family = AF_NETLINK;
    address.nl_groups = CN_IDX_PROC;
    if (socket_ < 0 ||
        ::bind(socket_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        problem_ = std::string("the kernel's process events (netlink proc connector): ") +
                   std::strerror(errno);
        if (socket_ >= 0) ::close(socket_);
        socket_ = -1;
        return;
    }
    // Room for a burst between two drains (each event ~100 bytes of buffer, more with overhead).
    const int bytes = 8 << 20;
    if (::setsockopt(socket_, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
        ::setsockopt(socket_, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
    // The kernel answers the request with an acknowledgement carrying its errno: EPERM without
    // CAP_NET_ADMIN in the initial user namespace.
    int error = send_op(socket_, PROC_CN_MCAST_LISTEN) ? 0 : errno;
    // Other listeners' events may be queued before it on a busy machine: read on for 1 s.
    bool acknowledged = false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (error == 0 && !acknowledged) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                              deadline - std::chrono::steady_clock::now())
                              .count();
        pollfd ready{socket_, POLLIN, 0};
        if (left <= 0 || ::poll(&ready, 1, static_cast<int>(left)) <= 0) break;
        char* buffer = reinterpret_cast<char*>(buffer_.data());
        ssize_t n = ::recv(socket_, buffer, buffer_bytes(), 0);
        if (n < 0 && errno == ENOBUFS) continue;
        if (n <= 0) break;
        for (auto* header = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(header, n);
             header = NLMSG_NEXT(header, n)) {
            proc_event event;
            if (!event_of(header, event) || event.what != proc_event::PROC_EVENT_NONE) continue;
            acknowledged = true;
            error = static_cast<int>(event.event_data.ack.err);
        }
    }
    if (error != 0 || !acknowledged) {
        if (error == EPERM)
            problem_ = "the kernel's process events need CAP_NET_ADMIN (root) before Linux 6.6";
        else if (error == ECONNREFUSED) // the connector exists in the initial one only
            problem_ = "the kernel's process events reach only the host's network namespace, "
                       "and the recorder runs in another (a container)";
        else
            problem_ = std::string("the kernel's process events did not answer") +
                       (error ? std::string(": ") + std::strerror(error) : "");
        ::close(socket_);
        socket_ = -1;
    }
}

BirthCounter::~BirthCounter() {
    if (socket_ < 0) return;
    // Closing alone does not tell the kernel: it would go on building events for nobody.
    send_op(socket_, PROC_CN_MCAST_IGNORE);
    ::close(socket_);
}

void BirthCounter::fork_event(pid_t parent, pid_t child) {
    if (!tree_.count(parent)) return;
    tree_.insert(child);
    ++count_.born;
    ++births_this_drain_;
    if (!seen_.count(child)) unseen_.insert(child); // a scan after the fork may have seen it
}

void BirthCounter::exit_event(pid_t pid) {
    if (unseen_.erase(pid)) ++count_.missed;
    tree_.erase(pid);
    seen_.erase(pid);
}

int BirthCounter::drain(const std::vector<pid_t>& members) {
    if (socket_ < 0) return 0;
    tree_.insert(members.begin(), members.end());
    births_this_drain_ = 0;
    char* buffer = reinterpret_cast<char*>(buffer_.data());
    for (;;) {
        ssize_t n = ::recv(socket_, buffer, buffer_bytes(), 0);
        if (n < 0 && errno == ENOBUFS) {
            count_.lower_bound = true; // the kernel dropped events: what follows still counts
            continue;
        }
        if (n <= 0) break;
        for (auto* header = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(header, n);
             header = NLMSG_NEXT(header, n)) {
            proc_event event;
            if (!event_of(header, event)) continue;
            if (event.what == proc_event::PROC_EVENT_FORK) {
                const auto& fork = event.event_data.fork;
                if (fork.child_pid == fork.child_tgid) // a process, not a thread
                    fork_event(fork.parent_tgid, fork.child_tgid);
            } else if (event.what == proc_event::PROC_EVENT_EXIT) {
                const auto& exit = event.event_data.exit;
                if (exit.process_pid == exit.process_tgid) exit_event(exit.process_tgid);
            }
        }
    }
    return births_this_drain_;
}

void BirthCounter::seen(const std::vector<pid_t>& live) {
    for (pid_t pid : live) {
        unseen_.erase(pid);
        seen_.insert(pid);
        tree_.insert(pid);
    }
}

} // namespace loaderlens
