// SPDX-License-Identifier: MIT
#define BOOST_TEST_MODULE loaderlens
#include <boost/test/unit_test.hpp>
