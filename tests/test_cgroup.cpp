// cgroup discovery and figures against real cgroups: a parent with a limit, the process in an
// unlimited child (as SLURM and systemd arrange them). Needs root and a writable memory hierarchy.
#include "loaderlens/cgroup_sampler.hpp"
#include "loaderlens/proc_text.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace loaderlens;
namespace fs = std::filesystem;

namespace {

bool write_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    out.flush();
    return static_cast<bool>(out);
}

// Made below our own memory cgroup, removed (after its processes) when the object goes.
struct TestCgroups {
    fs::path parent, child;
    pid_t member = -1;
    ~TestCgroups() {
        if (member > 0) {
            kill(member, SIGKILL);
            waitpid(member, nullptr, 0);
        }
        std::error_code ignored;
        fs::remove(child, ignored); // rmdir: cgroup directories hold only kernel files
        fs::remove(parent, ignored);
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(cgroup)

BOOST_AUTO_TEST_CASE(locates_our_own_memory_cgroup) {
    std::string why;
    auto where = locate_memory_cgroup(getpid(), &why);
    BOOST_REQUIRE_MESSAGE(where, why);
    BOOST_TEST((where->version == "v1" || where->version == "v2"));
    CgroupSample sample = read_cgroup(*where);
    BOOST_TEST(sample.usage.has_value());
    BOOST_TEST(*sample.usage > 0);
    BOOST_TEST((sample.limit.has_value() || sample.unlimited)); // a limit, or a known "no limit"
}

BOOST_AUTO_TEST_CASE(limit_of_a_parent_applies_to_an_unlimited_child) {
    auto own = locate_memory_cgroup(getpid());
    BOOST_REQUIRE(own);
    TestCgroups groups;
    groups.parent = fs::path(own->directory) / ("loaderlens-test-" + std::to_string(getpid()));
    groups.child = groups.parent / "task";
    std::error_code error;
    if (geteuid() != 0 || !fs::create_directory(groups.parent, error)) {
        BOOST_TEST_MESSAGE("skipped: cannot create a cgroup under " << own->directory);
        return;
    }
    BOOST_REQUIRE(fs::create_directory(groups.child, error));
    const std::int64_t limit_bytes = 512ll << 20;
    const char* limit_file = own->version == "v2" ? "memory.max" : "memory.limit_in_bytes";
    BOOST_REQUIRE(write_file(groups.parent / limit_file, std::to_string(limit_bytes)));

    groups.member = fork();
    if (groups.member == 0) {
        pause();
        _exit(0);
    }
    BOOST_REQUIRE(write_file(groups.child / "cgroup.procs", std::to_string(groups.member)));

    std::string why;
    auto where = locate_memory_cgroup(groups.member, &why);
    BOOST_REQUIRE_MESSAGE(where, why);
    BOOST_TEST(fs::equivalent(where->directory, groups.child));
    CgroupSample sample = read_cgroup(*where);
    BOOST_REQUIRE(sample.limit.has_value());
    BOOST_TEST(*sample.limit == limit_bytes / 1024);
    BOOST_TEST(!sample.unlimited);
}

BOOST_AUTO_TEST_SUITE_END()
