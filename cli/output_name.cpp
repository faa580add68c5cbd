#include "output_name.hpp"

#include <cstdlib>
#include <unistd.h>

namespace loaderlens::cli {

std::string node_name() {
    if (const char* slurm = std::getenv("SLURMD_NODENAME"); slurm && *slurm) return slurm;
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    return host;
}

std::string expand_output_name(const std::string& pattern) {
    std::string out;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] != '%' || i + 1 == pattern.size()) {
            out += pattern[i];
            continue;
        }
        switch (pattern[++i]) {
        case 'j': {
            const char* job = std::getenv("SLURM_JOB_ID");
            out += job && *job ? job : "nojob";
            break;
        }
        case 'N':
            out += node_name();
            break;
        case 'p':
            out += std::to_string(getpid());
            break;
        case '%':
            out += '%';
            break;
        default:
            out += '%';
            out += pattern[i];
        }
    }
    return out;
}

} // namespace loaderlens::cli
