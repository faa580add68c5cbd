// SPDX-License-Identifier: MIT
#include "output_name.hpp"

#include "loaderlens/name_pattern.hpp"
#include "loaderlens/recorder.hpp"

#include <cstdlib>
#include <filesystem>
#include <unistd.h>

namespace loaderlens::cli {

namespace {

std::string environment_or(const char* name, const std::string& fallback) {
    const char* value = std::getenv(name);
    return value && *value ? value : fallback;
}

bool in_slurm_job() {
    return !environment_or("SLURM_JOB_ID", "").empty();
}

} // namespace

std::string node_name() {
    return recording_host_name();
}

std::string expand_output_name(const std::string& pattern) {
    return expand_name_pattern(pattern, [](char key) -> std::optional<std::string> {
        switch (key) {
        case 'j':
            return environment_or("SLURM_JOB_ID", "nojob");
        case 's': // SLURM sets no step id in a batch script: that is the "batch" step
            return environment_or("SLURM_STEP_ID", in_slurm_job() ? "batch" : "nostep");
        case 't':
            return environment_or("SLURM_PROCID", "0");
        case 'a':
            return environment_or("SLURM_ARRAY_TASK_ID", "noarray");
        case 'N':
            return node_name();
        case 'p':
            return std::to_string(getpid());
        }
        return std::nullopt;
    });
}

std::string literal_output_name(const std::string& name) {
    std::string out;
    for (char c : name) {
        out += c;
        if (c == '%') out += '%';
    }
    return out;
}

std::string default_output_pattern(const std::string& prefix) {
    const std::string stem = prefix.empty() ? "loaderlens" : "loaderlens-" + prefix;
    return in_slurm_job() ? stem + "-%j.%s.%t-%N.db" : stem + "-%N-%p.db";
}

std::string numbered_name(const std::string& name, int n) {
    const std::filesystem::path path(name);
    const std::string extension = path.extension().string();
    const std::string stem = name.substr(0, name.size() - extension.size());
    return stem + "." + std::to_string(n) + extension;
}

} // namespace loaderlens::cli
