// aotgrad: `aotgrad launch --nproc N -- PROG ARGS` -- a single-host launcher that sets torchrun's
// variables (Debian's torchrun 1.13 fails on Python 3.11 before starting a worker).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
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
pid_t start_rank(int r, int n, int port, const std::vector<std::string>& argv) {
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

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  std::vector<Rank> ranks(static_cast<size_t>(nproc));
  for (int r = 0; r < nproc; ++r) ranks[r].pid = start_rank(r, nproc, port, args.positional);

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
       "aotgrad launch --nproc=N [--timeout=S] [--grace=S] [--master-port=P] -- PROG [ARGS...]",
       "Runs N copies of PROG on this host with torchrun's variables (RANK, LOCAL_RANK,\n"
       "WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT: a free port), each in\n"
       "its own process group, and waits for all; nothing is restarted. When a rank fails, it is\n"
       "named with its exit code or signal, and the others are stopped (SIGTERM, then SIGKILL)\n"
       "unless they end within the grace period. Exit status: 0 when every rank succeeded, else\n"
       "the first failed rank's code (128+signal), 124 on --timeout, 130 when interrupted.",
       {{"nproc", true, "number of ranks", "N"},
        {"timeout", true, "stop every rank after S seconds (default 0: no limit)", "S"},
        {"grace", true, "after a rank fails, time the others get to end (default 10)", "S"},
        {"master-port", true, "the rendezvous port (default: a free port of 127.0.0.1)", "P"}},
       1,
       1 << 20},
      run_launch};
  return cmd;
}

}  // namespace aotgrad::cli
