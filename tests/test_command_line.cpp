// Everything after the first -- belongs to the wrapped command, whatever option precedes it.
#include "support.hpp"

#include <boost/test/unit_test.hpp>

using namespace loaderlens;
using namespace loaderlens::test;

BOOST_AUTO_TEST_SUITE(command_line)

BOOST_AUTO_TEST_SUITE_END()
