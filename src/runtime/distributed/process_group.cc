// aotgrad: the process group registry and the world group from the launcher's environment.
#include "aotgrad/runtime/distributed/process_group.h"

#include <c10/util/Exception.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <torch/csrc/distributed/c10d/GroupRegistry.hpp>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "aotgrad/ir/error.h"

namespace aotgrad {
namespace {

// Where a rank runs: its host and process id.
struct Peer {
  std::string host;
  long pid = 0;
};

// Groups by name. Never destroyed: Gloo's worker threads must not be joined by static destructors
// at exit, when a peer may already be gone.
struct Registry {
  std::mutex mu;
  std::map<std::string, c10::intrusive_ptr<c10d::ProcessGroup>> groups;
  /// The world group's ranks (exited_ranks), by group name.
  std::map<std::string, std::vector<Peer>> peers;
};

Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

int int_env(const char* name, const std::string& value, int lo, int hi) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (...) {
    used = 0;
  }
  if (used != value.size() || used == 0 || v < lo || v > hi)
    throw Error(std::string(name) + "='" + value + "' is not an integer in [" + std::to_string(lo) +
                ", " + std::to_string(hi) + "]");
  return static_cast<int>(v);
}

std::string what_of(const std::exception& e) {
  if (auto* c = dynamic_cast<const c10::Error*>(&e)) return c->what_without_backtrace();
  return e.what();
}

std::string seconds(std::chrono::milliseconds t) {
  std::ostringstream os;
  os << static_cast<double>(t.count()) / 1000.0 << " s";
  return os.str();
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

// A process group that runs its collectives on Gloo: libtorch's ProcessGroup holds a Backend per
// device type and dispatches to it, here ProcessGroupGloo for the CPU.
c10::intrusive_ptr<c10d::ProcessGroup> gloo_process_group(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    c10::intrusive_ptr<c10d::ProcessGroupGloo::Options> opts) {
  auto backend = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, std::move(opts));
  auto pg = c10::make_intrusive<c10d::ProcessGroup>(store, rank, size);
  pg->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
  pg->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO, backend);
  return pg;
}

std::shared_ptr<::gloo::transport::Device> gloo_device(const std::string& master) {
  if (auto ifname = env("GLOO_SOCKET_IFNAME"))
    return c10d::ProcessGroupGloo::createDeviceForInterface(*ifname);
  if (is_loopback(master)) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

}  // namespace

std::optional<DistEnvironment> distributed_environment() {
  DistEnvironment e;
  std::optional<std::string> rank = env("RANK"), size = env("WORLD_SIZE"),
                             local = env("LOCAL_RANK");
  const char *rank_var = "RANK", *size_var = "WORLD_SIZE", *local_var = "LOCAL_RANK";
  e.source = "torchrun";
  if (!rank && !size) {
    rank = env("OMPI_COMM_WORLD_RANK");
    size = env("OMPI_COMM_WORLD_SIZE");
    local = env("OMPI_COMM_WORLD_LOCAL_RANK");
    rank_var = "OMPI_COMM_WORLD_RANK";
    size_var = "OMPI_COMM_WORLD_SIZE";
    local_var = "OMPI_COMM_WORLD_LOCAL_RANK";
    e.source = "OpenMPI";
    if (!rank && !size) return std::nullopt;
  }
  if (!rank || !size)
    throw Error(std::string(rank ? size_var : rank_var) + " is not set but " +
                (rank ? rank_var : size_var) + " is: set both (as torchrun or mpirun does)");
  e.world_size = int_env(size_var, *size, 1, 1 << 20);
  e.rank = int_env(rank_var, *rank, 0, e.world_size - 1);
  e.local_rank = local ? int_env(local_var, *local, 0, e.world_size - 1) : e.rank;
  std::optional<std::string> addr = env("MASTER_ADDR"), port = env("MASTER_PORT");
  if (e.source == "OpenMPI") {
    if (!addr) addr = "127.0.0.1";
    if (!port) port = "29500";
  }
  if (e.world_size > 1 && (!addr || !port))
    throw Error(std::string(addr ? "MASTER_PORT" : "MASTER_ADDR") + " is not set (" + size_var +
                "=" + *size + "): the rendezvous needs the master's address and port");
  e.master_addr = addr.value_or("127.0.0.1");
  if (port) e.master_port = int_env("MASTER_PORT", *port, 1, 65535);
  return e;
}

std::chrono::milliseconds distributed_timeout() {
  auto v = env("AOTGRAD_DIST_TIMEOUT");
  if (!v) return std::chrono::seconds(300);
  double s = 0;
  size_t used = 0;
  try {
    s = std::stod(*v, &used);
  } catch (...) {
    used = 0;
  }
  if (used != v->size() || !(s > 0) || s > 1e7)
    throw Error("AOTGRAD_DIST_TIMEOUT='" + *v + "' is not a positive number of seconds");
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
}

namespace {

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

// Whether process `pid` of this host is gone: no such process, or a zombie its parent has not
// reaped yet.
bool process_gone(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
  std::string line;
  std::getline(stat, line);
  size_t close = line.rfind(')');  // "pid (comm) S ..."
  return close != std::string::npos && close + 2 < line.size() &&
         (line[close + 2] == 'Z' || line[close + 2] == 'X');
}

// Every rank's host and pid, through `store`, once every rank has joined.
std::vector<Peer> exchange_peers(c10d::Store& store, int rank, int size) {
  const std::string me = host_name() + " " + std::to_string(static_cast<long>(getpid()));
  store.set("aotgrad/peer/" + std::to_string(rank), std::vector<uint8_t>(me.begin(), me.end()));
  std::vector<Peer> peers(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    std::vector<uint8_t> v = store.get("aotgrad/peer/" + std::to_string(r));
    std::istringstream in(std::string(v.begin(), v.end()));
    in >> peers[static_cast<size_t>(r)].host >> peers[static_cast<size_t>(r)].pid;
  }
  return peers;
}

c10::intrusive_ptr<c10d::ProcessGroup> make_world(const DistEnvironment& e,
                                                  std::chrono::milliseconds timeout,
                                                  std::vector<Peer>* peers) {
  std::string where = "rank " + std::to_string(e.rank) + " of " + std::to_string(e.world_size) +
                      " (from " + e.source + "'s environment)";
  std::string master = e.master_addr + ":" + std::to_string(e.master_port);
  c10::intrusive_ptr<c10d::Store> store;
  try {
    if (e.world_size == 1) {
      store = c10::make_intrusive<c10d::HashStore>();
    } else {
      c10d::TCPStoreOptions o;
      o.port = static_cast<uint16_t>(e.master_port);
      o.isServer = e.rank == 0;
      o.numWorkers = static_cast<size_t>(e.world_size);
      o.waitWorkers = true;
      o.timeout = timeout;
      store = c10::make_intrusive<c10d::TCPStore>(e.master_addr, o);
    }
  } catch (const std::exception& ex) {
    throw Error("process group '0': " + where + " could not meet the other ranks at master " +
                master + " within " + seconds(timeout) + ": " + what_of(ex) +
                (e.rank == 0 ? " (is the port free, and did all " + std::to_string(e.world_size) +
                                   " ranks start? WORLD_SIZE must be the number of ranks)"
                             : " (is the master reachable and rank 0 running?)"));
  }
  try {
    auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
    opts->devices.push_back(gloo_device(e.master_addr));
    opts->threads = 2;
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>("aotgrad/0", store);
    auto pg = gloo_process_group(prefixed, e.rank, e.world_size, opts);
    *peers = exchange_peers(*store, e.rank, e.world_size);
    return pg;
  } catch (const std::exception& ex) {
    throw Error("process group '0': " + where + " could not connect to every rank (master " +
                master + ", Gloo) within " + seconds(timeout) + ": " + what_of(ex) + " (did all " +
                std::to_string(e.world_size) +
                " ranks start? WORLD_SIZE must be the number of ranks, and a rank that exited "
                "before joining leaves the others waiting)");
  }
}

// Adds `group` under `name` to aotgrad's registry and to c10d's, where libtorch's own
// _c10d_functional kernels find a group by name. The caller holds r.mu and has checked that
// `name` is free.
void add_group(Registry& r, const std::string& name,
               const c10::intrusive_ptr<c10d::ProcessGroup>& group) {
  r.groups[name] = group;
  group->setGroupName(name);
  c10d::register_process_group(name, group);
}

}  // namespace

void init_world_process_group(const DistEnvironment& env, std::chrono::milliseconds timeout) {
  // A write to the socket of a rank that died raises SIGPIPE, whose default action kills this
  // rank before Gloo can say which peer went (a Python process ignores SIGPIPE from its start).
  // Ignored, unless the program handles it itself: the write fails with EPIPE and the collective
  // raises, naming the rank that exited.
  struct sigaction old {};
  if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.groups.count(kWorldGroupName)) throw Error("the world process group '0' exists already");
  add_group(r, kWorldGroupName, make_world(env, timeout, &r.peers[kWorldGroupName]));
}

void register_process_group(const std::string& name,
                            const c10::intrusive_ptr<c10d::ProcessGroup>& group) {
  if (!group) throw Error("register_process_group('" + name + "'): the group is null");
  if (name.empty()) throw Error("register_process_group: the name is empty");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.groups.count(name))
    throw Error("a process group named '" + name + "' is registered already");
  add_group(r, name, group);
}

void prepare_process_group(const std::string& name) { resolve_process_group(name); }

c10::intrusive_ptr<c10d::ProcessGroup> resolve_process_group(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (auto it = r.groups.find(name); it != r.groups.end()) return it->second;
  if (name == kWorldGroupName) {
    std::optional<DistEnvironment> e = distributed_environment();
    if (!e)
      throw Error(
          "no process group '0' (the world): this process was not started by a launcher "
          "(neither torchrun's RANK/WORLD_SIZE nor OpenMPI's OMPI_COMM_WORLD_RANK/SIZE are set); "
          "run it under `aotgrad launch --nproc N -- ...`, torchrun or mpirun");
    auto pg = make_world(*e, distributed_timeout(), &r.peers[name]);
    add_group(r, name, pg);
    return pg;
  }
  std::string known;
  for (const auto& [n, g] : r.groups) known += (known.empty() ? "'" : ", '") + n + "'";
  throw Error("unknown process group '" + name +
              "' (registered: " + (known.empty() ? std::string("none") : known) +
              "; the world group is '0', others are registered with register_process_group)");
}

std::string exited_ranks(const std::string& group, std::chrono::milliseconds patience) {
  std::vector<Peer> peers;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.peers.find(group);
    if (it == r.peers.end()) return "";
    peers = it->second;
  }
  const std::string here = host_name();
  const auto until = std::chrono::steady_clock::now() + patience;
  for (;;) {
    std::string out;
    for (size_t k = 0; k < peers.size(); ++k) {
      const Peer& p = peers[k];
      if (p.host != here || p.pid == static_cast<long>(getpid()) || !process_gone(p.pid)) continue;
      out += (out.empty() ? "" : ", ") + std::string("rank ") + std::to_string(k) + " (pid " +
             std::to_string(p.pid) + ")";
    }
    if (!out.empty() || std::chrono::steady_clock::now() >= until) return out;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::vector<std::string> process_group_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> out;
  for (const auto& [n, g] : r.groups) out.push_back(n);
  return out;
}

void clear_process_groups() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.groups.clear();
  r.peers.clear();
}

}  // namespace aotgrad
