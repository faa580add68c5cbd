// Damaged and cut recordings, and the reader's checks: what `report` says of a recording whose
// recorder was killed, whose -wal file was lost, or whose meta holds text where a number belongs.
#include "support.hpp"

#include <boost/test/unit_test.hpp>

using namespace loaderlens;
using namespace loaderlens::test;

BOOST_AUTO_TEST_SUITE(recording_integrity)

BOOST_AUTO_TEST_SUITE_END()
