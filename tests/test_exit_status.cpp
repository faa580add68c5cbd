// Exit statuses of workers that are children of main, not of the recorder.
#include "support.hpp"

#include <boost/test/unit_test.hpp>

using namespace loaderlens;
using namespace loaderlens::test;

BOOST_AUTO_TEST_SUITE(exit_status)

BOOST_AUTO_TEST_SUITE_END()
