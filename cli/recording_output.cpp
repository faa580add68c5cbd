// SPDX-License-Identifier: MIT
#include "recording_output.hpp"

#include "output_name.hpp"

#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace loaderlens::cli {

namespace {

bool exists(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

// The recording at `path` and every file that comes with it.
std::vector<std::string> files_of(const std::string& path, const RecordingRequest& request) {
    std::vector<std::string> files{path};
    for (const std::string& suffix : sqlite_companion_suffixes())
        files.push_back(path + suffix);
    for (const std::string& suffix : request.sidecar_suffixes)
        files.push_back(path + suffix);
    return files;
}

std::optional<std::string> first_existing(const std::vector<std::string>& files) {
    for (const std::string& file : files)
        if (exists(file)) return file;
    return std::nullopt;
}

void remove_recording_files(const std::string& path) {
    ::unlink(path.c_str());
    for (const std::string& suffix : sqlite_companion_suffixes())
        ::unlink((path + suffix).c_str());
}

// The recorder at `path`, then its sidecars; on a sidecar that cannot be made, nothing is left.
CreatedRecorder create_at(const std::string& path, bool overwrite,
                          const RecordingRequest& request) {
    CreatedRecorder created;
    created.recorder = std::make_unique<Recorder>(path, overwrite);
    created.path = path;
    try {
        for (const std::string& suffix : request.sidecar_suffixes)
            created.sidecars.emplace_back(std::filesystem::absolute(path + suffix).string());
    } catch (const SidecarError& e) {
        discard_recording(created);
        throw RecorderError(e.what());
    }
    return created;
}

// --force: every file of the recording must be a regular file (or absent) and none an input.
void check_replaceable(const RecordingRequest& request) {
    for (const std::string& file : files_of(request.path, request)) {
        if (auto input = request.inputs.input_at(file))
            throw RecorderError(file + ": is " +
                                (*input == file ? "an input" : "the input " + *input) +
                                " of this run: not overwritten, even with --force");
        if (auto problem = replace_problem(file)) throw RecorderError(*problem);
    }
}

} // namespace

CreatedRecorder create_recorder(const RecordingRequest& request) {
    if (auto problem = output_name_problem("-o", request.path)) throw RecorderError(*problem);
    if (request.overwrite) {
        check_replaceable(request);
        // The Recorder removes the recording and its SQLite companions; the sidecars go here.
        // unlink() removes a name, never what a link points to.
        for (const std::string& suffix : request.sidecar_suffixes)
            ::unlink((request.path + suffix).c_str());
        return create_at(request.path, true, request);
    }
    if (request.no_clobber) {
        if (auto taken = first_existing(files_of(request.path, request)); taken)
            throw RecorderError(*taken + ": file exists (--no-clobber)");
        return create_at(request.path, false, request);
    }
    std::string taken;
    for (int n = 0;; ++n) {
        const std::string path = n == 0 ? request.path : numbered_name(request.path, n);
        if (auto existing = first_existing(files_of(path, request)); existing && n < 9999) {
            if (n == 0) taken = *existing;
            continue;
        }
        try {
            CreatedRecorder created = create_at(path, false, request);
            created.taken = taken;
            return created;
        } catch (const RecorderError&) {
            // Another recorder took the name first (the Recorder and the sidecars are created
            // with O_EXCL): the next one. Anything else (no such directory...) is the answer.
            if (!first_existing(files_of(path, request)) || n >= 9999) throw;
            if (n == 0) taken = request.path;
        }
    }
}

void discard_recording(CreatedRecorder& created) {
    created.recorder.reset();
    if (!created.path.empty()) remove_recording_files(created.path);
    created.sidecars.clear();
}

} // namespace loaderlens::cli
