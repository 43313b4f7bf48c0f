// aotgrad: `aotgrad launch --nproc N -- PROG ARGS` -- a single-host launcher that sets torchrun's
// variables (a C++ program needs no Python for it: torchrun is a Python tool) and, as PyTorch's
// CPU launcher (torch.backends.xeon.run_cpu) does, preloads tcmalloc or jemalloc.
#include <arpa/inet.h>
#include <glob.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "aotgrad/ir/error.h"
#include "commands.h"

namespace aotgrad::cli {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

void on_signal(int sig) { g_stop_signal = sig; }

// A port of 127.0.0.1 free when asked (the kernel's choice for port 0).
int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw Error(std::string("launch: socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    std::string why = std::strerror(errno);
    close(fd);
    throw Error("launch: cannot find a free port on 127.0.0.1: " + why);
  }
  close(fd);
  return ntohs(a.sin_port);
}

int parse_int(const Args& args, const std::string& name, int def, int lo, int hi) {
  auto v = args.get(name);
  if (!v) return def;
  try {
    size_t used = 0;
    int n = std::stoi(*v, &used);
    if (used == v->size() && n >= lo && n <= hi) return n;
  } catch (...) {
  }
  throw UsageError{"--" + name + " takes an integer in [" + std::to_string(lo) + ", " +
                   std::to_string(hi) + "], got '" + *v + "'"};
}

double parse_seconds(const Args& args, const std::string& name, double def) {
  auto v = args.get(name);
  if (!v) return def;
  try {
    size_t used = 0;
    double s = std::stod(*v, &used);
    if (used == v->size() && s >= 0) return s;
  } catch (...) {
  }
  throw UsageError{"--" + name + " takes a number of seconds >= 0, got '" + *v + "'"};
}

// Note [The ranks' allocator]
// glibc's malloc gives the top of its heap back to the system whenever more than its trim
// threshold is free there, and unmaps large blocks when they are freed; a training step that frees
// its activations and gradients and makes them again next step then takes every page back with a
// page fault (resnet18 at batch 16: 6,300 faults and a sixth of eager's step time, more for a
// compiled step whose gradients are made last and sit on the heap top). PyTorch's CPU launcher
// (python -m torch.backends.xeon.run_cpu) preloads tcmalloc, else jemalloc (with its MALLOC_CONF),
// unless told --use_default_allocator; so does this one, with the same choices. An allocator the
// caller preloaded already is kept; one asked for by name and not found is an error.

using Env = std::vector<std::pair<std::string, std::string>>;

// The directories run_cpu looks in, and Debian's multiarch library directories.
std::vector<std::string> library_dirs() {
  std::vector<std::string> dirs;
  for (const char* var : {"CONDA_PREFIX", "VIRTUAL_ENV"})
    if (const char* v = std::getenv(var)) dirs.push_back(std::string(v) + "/lib");
  if (const char* home = std::getenv("HOME")) dirs.push_back(std::string(home) + "/.local/lib");
  for (const char* d : {"/usr/local/lib", "/usr/local/lib64", "/usr/lib", "/usr/lib64"})
    dirs.push_back(d);
  glob_t g{};
  if (glob("/usr/lib/*-linux-gnu*", GLOB_ONLYDIR, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) dirs.push_back(g.gl_pathv[i]);
  globfree(&g);
  return dirs;
}

std::optional<std::string> find_library(const std::vector<std::string>& names) {
  for (const std::string& dir : library_dirs())
    for (const std::string& name : names) {
      std::string path = dir + "/" + name;
      if (access(path.c_str(), R_OK) == 0) return path;
    }
  return std::nullopt;
}

struct AllocatorLib {
  const char* name;     // "tcmalloc"
  const char* flag;     // "enable-tcmalloc"
  const char* package;  // Debian's
  std::vector<std::string> files;
};

const AllocatorLib kTcmalloc{
    "tcmalloc",
    "enable-tcmalloc",
    "libtcmalloc-minimal4",
    {"libtcmalloc.so", "libtcmalloc.so.4", "libtcmalloc_minimal.so", "libtcmalloc_minimal.so.4"}};
const AllocatorLib kJemalloc{
    "jemalloc", "enable-jemalloc", "libjemalloc2", {"libjemalloc.so", "libjemalloc.so.2"}};

// The variables that make the ranks use the chosen allocator (Note [The ranks' allocator]).
Env allocator_env(const Args& args) {
  int asked =
      args.has("enable-tcmalloc") + args.has("enable-jemalloc") + args.has("use-default-allocator");
  if (asked > 1)
    throw UsageError{
        "give at most one of --enable-tcmalloc, --enable-jemalloc, --use-default-allocator"};
  if (args.has("use-default-allocator")) return {};
  const char* preloaded = std::getenv("LD_PRELOAD");
  std::string preload = preloaded ? preloaded : "";
  if (preload.find("tcmalloc") != std::string::npos ||
      preload.find("jemalloc") != std::string::npos)
    return {};  // the caller chose already
  std::vector<const AllocatorLib*> candidates;
  if (args.has("enable-tcmalloc"))
    candidates = {&kTcmalloc};
  else if (args.has("enable-jemalloc"))
    candidates = {&kJemalloc};
  else
    candidates = {&kTcmalloc, &kJemalloc};
  for (const AllocatorLib* lib : candidates) {
    std::optional<std::string> path = find_library(lib->files);
    if (!path) continue;
    Env env{{"LD_PRELOAD", preload.empty() ? *path : *path + ":" + preload}};
    if (lib == &kJemalloc && !std::getenv("MALLOC_CONF"))
      env.emplace_back("MALLOC_CONF",
                       "oversize_threshold:1,background_thread:true,metadata_thp:auto");
    return env;
  }
  if (candidates.size() == 1)
    throw Error(std::string("launch: --") + candidates[0]->flag + ": no lib" + candidates[0]->name +
                " found in the library directories (Debian's package: " + candidates[0]->package +
                ")");
  std::cerr << "aotgrad launch: neither tcmalloc nor jemalloc found (Debian's packages: "
               "libtcmalloc-minimal4, libjemalloc2); the ranks use the C library's malloc, whose "
               "page faults may slow training steps\n";
  return {};
}

struct Rank {
  pid_t pid = -1;
  bool done = false;
  int status = 0;
};

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    return "was killed by signal " + std::to_string(sig) +
           (name ? std::string(" (") + name + ")" : "");
  }
  return "ended with status " + std::to_string(status);
}

bool failed(int status) { return !WIFEXITED(status) || WEXITSTATUS(status) != 0; }

// Starts rank `r` in its own process group with torchrun's variables.
pid_t start_rank(int r, int n, int port, const Env& env, const std::vector<std::string>& argv) {
  pid_t pid = fork();
  if (pid < 0) throw Error(std::string("launch: fork: ") + std::strerror(errno));
  if (pid > 0) {
    setpgid(pid, pid);
    return pid;
  }
  setpgid(0, 0);
  std::string rs = std::to_string(r), ns = std::to_string(n), ps = std::to_string(port);
  setenv("RANK", rs.c_str(), 1);
  setenv("LOCAL_RANK", rs.c_str(), 1);
  setenv("GROUP_RANK", "0", 1);
  setenv("ROLE_RANK", rs.c_str(), 1);
  setenv("WORLD_SIZE", ns.c_str(), 1);
  setenv("LOCAL_WORLD_SIZE", ns.c_str(), 1);
  setenv("ROLE_WORLD_SIZE", ns.c_str(), 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", ps.c_str(), 1);
  setenv("TORCHELASTIC_RESTART_COUNT", "0", 1);
  setenv("TORCHELASTIC_MAX_RESTARTS", "0", 1);
  for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  execvp(cargv[0], cargv.data());
  std::cerr << "aotgrad launch: rank " << r << ": cannot run '" << argv[0]
            << "': " << std::strerror(errno) << "\n";
  _exit(127);
}

void signal_all(std::vector<Rank>& ranks, int sig) {
  for (Rank& r : ranks)
    if (!r.done) kill(-r.pid, sig);
}

int run_launch(const Args& args) {
  int nproc = parse_int(args, "nproc", -1, 1, 1024);
  if (nproc < 0) throw UsageError{"give --nproc=N"};
  double timeout = parse_seconds(args, "timeout", 0);
  double grace = parse_seconds(args, "grace", 10);
  int port = args.has("master-port") ? parse_int(args, "master-port", 0, 1, 65535) : free_port();
  if (args.positional.empty()) throw UsageError{"give the program after --"};
  Env env = allocator_env(args);

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  std::vector<Rank> ranks(static_cast<size_t>(nproc));
  for (int r = 0; r < nproc; ++r) ranks[r].pid = start_rank(r, nproc, port, env, args.positional);

  int first_failed = -1;
  std::optional<Clock::time_point> stop_at;  // when the survivors get SIGTERM
  std::optional<Clock::time_point> kill_at;  // and SIGKILL
  std::string why_stopped;
  size_t running = ranks.size();
  while (running > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (size_t r = 0; r < ranks.size(); ++r) {
        if (ranks[r].pid != pid || ranks[r].done) continue;
        ranks[r].done = true;
        ranks[r].status = status;
        --running;
        if (failed(status) && first_failed < 0 && !kill_at) {
          first_failed = static_cast<int>(r);
          std::cerr << "aotgrad launch: rank " << r << " (pid " << pid << ") "
                    << describe_exit(status);
          if (running > 0)
            std::cerr << "; stopping the other ranks in " << grace << " s unless they end";
          std::cerr << "\n";
          stop_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(grace));
          why_stopped = "rank " + std::to_string(r) + " failed";
        }
      }
      continue;
    }
    auto now = Clock::now();
    if (g_stop_signal && !kill_at) {
      why_stopped = std::string("the launcher got ") + strsignal(g_stop_signal);
      stop_at = now;
    }
    if (timeout > 0 && !kill_at && now - start > std::chrono::duration<double>(timeout)) {
      std::cerr << "aotgrad launch: timed out after " << timeout << " s; stopping every rank\n";
      why_stopped = "timeout";
      stop_at = now;
    }
    if (stop_at && now >= *stop_at && !kill_at) {
      signal_all(ranks, SIGTERM);
      kill_at = now + std::chrono::seconds(3);
    }
    if (kill_at && now >= *kill_at) signal_all(ranks, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  int code = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (!failed(ranks[r].status)) continue;
    if (static_cast<int>(r) != first_failed)
      std::cerr << "aotgrad launch: rank " << r << " " << describe_exit(ranks[r].status) << "\n";
  }
  if (first_failed >= 0) {
    int st = ranks[first_failed].status;
    code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  } else if (!why_stopped.empty()) {
    code = why_stopped == "timeout" ? 124 : 130;
  }
  return code;
}

}  // namespace

const Command& launch_command() {
  static const Command cmd{
      {"launch",
       "aotgrad launch --nproc=N [--timeout=S] [--grace=S] [--master-port=P]\n"
       "               [--enable-tcmalloc | --enable-jemalloc | --use-default-allocator]\n"
       "               -- PROG [ARGS...]",
       "Runs N copies of PROG on this host with torchrun's variables (RANK, LOCAL_RANK,\n"
       "WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT: a free port), each in\n"
       "its own process group, and waits for all; nothing is restarted. When a rank fails, it is\n"
       "named with its exit code or signal, and the others are stopped (SIGTERM, then SIGKILL)\n"
       "unless they end within the grace period. Exit status: 0 when every rank succeeded, else\n"
       "the first failed rank's code (128+signal), 124 on --timeout, 130 when interrupted.\n"
       "As PyTorch's CPU launcher (torch.backends.xeon.run_cpu), the ranks get tcmalloc, else\n"
       "jemalloc, through LD_PRELOAD unless --use-default-allocator or LD_PRELOAD names one.",
       {{"nproc", true, "number of ranks", "N"},
        {"timeout", true, "stop every rank after S seconds (default 0: no limit)", "S"},
        {"grace", true, "after a rank fails, time the others get to end (default 10)", "S"},
        {"master-port", true, "the rendezvous port (default: a free port of 127.0.0.1)", "P"},
        {"enable-tcmalloc", false, "preload tcmalloc (an error when it is not found)"},
        {"enable-jemalloc", false, "preload jemalloc, with run_cpu's MALLOC_CONF"},
        {"use-default-allocator", false, "preload no allocator: the C library's malloc"}},
       1,
       1 << 20},
      run_launch};
  return cmd;
}

}  // namespace aotgrad::cli
