#include "precondition.hpp"

#include <cstdlib>
#include <iostream>

namespace loaderlens::test {

bool strict_mode() {
    const char* strict = std::getenv("LOADERLENS_STRICT");
    return strict && std::string(strict) == "1";
}

bool precondition(bool holds, const std::string& reason, InCi in_ci) {
    if (holds) return true;
    if (in_ci == InCi::must_have && strict_mode()) {
        BOOST_FAIL("LOADERLENS-MISSING: " + reason + " (strict mode: CI must have it)");
        return false;
    }
    std::cout << "LOADERLENS-SKIP: " << reason << std::endl;
    return false;
}

} // namespace loaderlens::test
