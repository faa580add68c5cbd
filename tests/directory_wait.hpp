// SPDX-License-Identifier: MIT
// Waiting for a file to appear in a directory, with inotify: the moment a command makes it, for
// tests that act at that moment (a signal, say) instead of after a sleep.
#pragma once

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <poll.h>
#include <string>
#include <sys/inotify.h>
#include <unistd.h>

namespace loaderlens::test {

// The first entry of `dir` that `wanted` accepts, waited for with inotify (the directory is read
// again after each event, and once after the watch is set: nothing made before it is missed).
// Empty after `timeout` or when `dir` is gone.
inline std::string wait_for_entry(const std::string& dir,
                                  const std::function<bool(const std::string&)>& wanted,
                                  std::chrono::milliseconds timeout) {
    const int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    BOOST_REQUIRE(fd >= 0);
    inotify_add_watch(fd, dir.c_str(), IN_CREATE | IN_MOVED_TO);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string found;
    for (;;) {
        std::error_code error;
        for (std::filesystem::directory_iterator it(dir, error), end; !error && it != end;
             it.increment(error))
            if (wanted(it->path().filename().string())) found = it->path().string();
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                              deadline - std::chrono::steady_clock::now())
                              .count();
        if (!found.empty() || error || left <= 0) break;
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, static_cast<int>(left)) <= 0) break;
        char events[4096];
        while (read(fd, events, sizeof events) > 0) {
        }
    }
    close(fd);
    return found;
}

} // namespace loaderlens::test
