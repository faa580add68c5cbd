// SPDX-License-Identifier: MIT
// The dashboard says the numbers `report` says (issue 26): its models over the GUI suites' real
// replays (scenarios 1, 4 and 7) against `report --json` and core's series().
#include "../consumers_agree.hpp"
#include "../precondition.hpp"
#include "../support.hpp"
#include "gui_consumers_agree.hpp"
#include "gui_support.hpp"

#include <boost/test/unit_test.hpp>

using namespace loaderlens::test;

BOOST_AUTO_TEST_SUITE(gui_consumers)

BOOST_AUTO_TEST_CASE(npy_mmap_scenario) {
    BOOST_TEST(check_gui_consumers_agree(scenario_recording(1)) > 50);
}

BOOST_AUTO_TEST_CASE(lmdb_persistent_scenario) {
    BOOST_TEST(check_gui_consumers_agree(scenario_recording(4)) > 50);
}

BOOST_AUTO_TEST_CASE(copy_on_read_scenario) {
    BOOST_TEST(check_gui_consumers_agree(scenario_recording(7)) > 50);
}

// Processes whose PSS could not be read: the Σ PSS stack is partial where `report` says so.
BOOST_AUTO_TEST_CASE(partly_unreadable_tree, *LOADERLENS_MAY_SKIP) {
    if (!precondition(can_record_partly_unreadable(),
                      "needs root and setpriv to record root processes as nobody", InCi::must_have))
        return;
    TempDir dir;
    const std::string out = dir.file("partial.db");
    record_partly_unreadable(dir.path(), out);
    BOOST_TEST(check_gui_consumers_agree(out) > 20);
}

BOOST_AUTO_TEST_SUITE_END()
