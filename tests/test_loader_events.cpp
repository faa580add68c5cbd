// SPDX-License-Identifier: MIT
// The loader events file as the recorder reads it: a line is an event only when every field has
// its type; a float where an integer belongs (1e308 would be converted with undefined behaviour),
// text or a missing field makes the line unreadable (counted), never a crash or a wrong figure.
#include "loaderlens/loader_events.hpp"

#include <boost/test/unit_test.hpp>

using namespace loaderlens;

BOOST_AUTO_TEST_SUITE(loader_events)

BOOST_AUTO_TEST_CASE(fields_of_the_wrong_kind_make_a_line_unreadable) {
    const RecordingClock clock;
    LoaderRun run;
    const std::string progress = R"({"event":"progress","boot_ns":1,"epoch":0,"generation":0,)"
                                 R"("bytes_read":10,"distinct_bytes":10,"workers":)";
    add_loader_event(progress + "[5, 6]}", clock, run);
    BOOST_REQUIRE_EQUAL(run.progress.size(), 1u);
    BOOST_TEST((run.progress[0].worker_distinct_bytes == std::vector<std::int64_t>{5, 6}));
    add_loader_event(progress + "[1e308]}", clock, run);
    add_loader_event(progress + "[\"5\"]}", clock, run);
    add_loader_event(progress + "7}", clock, run);
    add_loader_event(
        R"({"event":"worker","worker":1.5,"generation":0,"epoch":0,"pid":1,"boot_ns":1})", clock,
        run);
    add_loader_event(R"({"event":"epoch","epoch":0})", clock, run);
    BOOST_TEST(run.progress.size() == 1u);
    BOOST_TEST(run.workers.empty());
    BOOST_TEST(run.epochs.empty());
    BOOST_TEST(run.unreadable_lines == 5);
}

BOOST_AUTO_TEST_SUITE_END()
