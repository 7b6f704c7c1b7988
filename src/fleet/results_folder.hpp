#pragma once
// `stagebench ingest`: results folders (a job's results/ from run.sh, fleet/bundle.hpp, handed
// back by a device cloud, a CI runner, LAVA or Ansible) into a results store. Each folder's
// manifest.json is a claim, read within bounds and checked: every file it lists must be there,
// of the size and SHA-256 it says. A folder that fails a check is skipped with the reason and
// none of its documents is stored; the documents of the others are appended once by content
// (ResultStore::append_once), however often a folder is ingested.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace sb {

class ResultStore;

// The largest manifest read, and the most files it may list.
inline constexpr std::size_t kMaxManifestBytes = 1 << 20;
inline constexpr std::size_t kMaxManifestFiles = 64;

struct ResultsFile {
    std::string name;  // a plain file name in the folder ([A-Za-z0-9._-], not starting with '.')
    std::string kind;  // "document", "trace", "junit", "log"
    uint64_t bytes = 0;
    std::optional<std::string> sha256;  // 64 lowercase hex digits; nullopt: none was computed
};

struct ResultsManifest {
    std::string dir;
    std::string host;     // the device's name (uname -n), "" when absent
    std::string outcome;  // "measured", "failed", "not_measured"
    int exit_code = 0;    // the measuring command's
    std::vector<ResultsFile> files;
};

// Reads dir/manifest.json. Throws sb::Error(input), one line, when it is missing, larger than
// kMaxManifestBytes, not JSON, not a stagebench results manifest (stagebench_results 1), or
// has a field out of its bounds (a file name with a path in it, more than kMaxManifestFiles
// files, a hash that is not 64 hex digits).
ResultsManifest read_results_manifest(const std::string& dir);

// Checks that every file of m is there, a regular file of its size and SHA-256. Throws
// sb::Error(input) naming the first that is not (a file with no hash fails too: it cannot be
// checked).
void verify_results_folder(const ResultsManifest& m);

// root itself when it holds manifest.json, else the folders below it that do (at most 4
// levels down, symbolic links not followed), sorted by path. Throws sb::Error(input) when
// root is not a readable folder.
std::vector<std::string> find_results_folders(const std::string& root);

struct IngestSummary {
    int folders = 0;
    int stored = 0, present = 0;       // documents added / found already in the store
    std::vector<std::string> skipped;  // "FOLDER: why", one per folder skipped
};

// Ingests the results folders found under each of roots (find_results_folders) into store:
// each folder is read and verified, then its documents appended once (a folder whose run
// measured nothing, with no document, is skipped with its stderr.log's last line). One line per
// document or skipped folder goes to log. Throws sb::Error(input) for a root that is not a
// folder or holds no results folder; a store's refusal (sb::Error) is thrown as it comes, what
// was stored before it staying stored.
IngestSummary ingest_results(const std::vector<std::string>& roots, ResultStore& store,
                             std::ostream& log);

}  // namespace sb
