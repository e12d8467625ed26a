/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What is at a netns path, and who already uses a netns (interfaces,
 * processes): what a caller must know before replacing one. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

int nshash_path_classify(const char *path, enum nshash_path_kind *kind, char *detail, size_t detail_len,
			 struct nshash_error *err)
{
	struct stat st;
	char target[512] = "";
	detail[0] = '\0';
	if (lstat(path, &st) < 0) {
		if (errno == ENOENT || errno == ENOTDIR) {
			*kind = NSHASH_PATH_MISSING;
			snprintf(detail, detail_len, "no such file");
			return 0;
		}
		return nsh_error_sys(err, errno, "%s", path);
	}
	bool link = S_ISLNK(st.st_mode);
	if (link) {
		ssize_t n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			return nsh_error_sys(err, errno, "read the symbolic link");
		target[n] = '\0';
	}
	/* Never open anything but nsfs (a FIFO would block, a device's driver
	 * would run); a link is followed only to see what it points at. */
	cleanup_close int fd = -1;
	const char *not_netns;
	int r = nsh_path_open_netns(path, link, &fd, &not_netns);
	if (r == -ENOENT && link) {
		*kind = NSHASH_PATH_MISSING;
		snprintf(detail, detail_len, "a symbolic link to %s, which does not exist", target);
		return 0;
	}
	if (r < 0)
		return nsh_error_sys(err, r, "open");
	if (link) {
		if (not_netns) {
			*kind = NSHASH_PATH_NOT_NETNS;
			snprintf(detail, detail_len, "a symbolic link to %s, which is not a network namespace", target);
		} else {
			*kind = nsh_is_proc_netns_link(path) ? NSHASH_PATH_PROC : NSHASH_PATH_LINK;
			snprintf(detail, detail_len, "%s", target);
		}
		return 0;
	}
	if (!not_netns) {
		*kind = NSHASH_PATH_PIN;
		return 0;
	}
	*kind = NSHASH_PATH_NOT_NETNS;
	snprintf(detail, detail_len, "%s",
		 S_ISREG(st.st_mode) ? "a regular file with nothing mounted on it (a stale pin?)" : not_netns);
	return 0;
}

/* P's nsfs inode is made when the netns first gets a path (podman's bind
 * mount, right after it made the netns) and lives as long as the pin, so
 * its ctime is when P was pinned; the engine's start time is in
 * /proc/PID/stat (ticks since boot).  A netns pinned before the engine
 * started (e.g. one given with --network ns:) is not one it made for this
 * start.  A start time is rounded down to a tick (USER_HZ): P must be
 * pinned over a tick after it, so that a pin made just before the engine
 * started is never taken for one made after; ctime's coarse clock, which
 * lags, errs the same way (a netns podman 5 pins 20-40 ms after it starts
 * is accepted, one `ip netns add` pinned 3 ms before it is not). */
bool nsh_pinned_after_start(pid_t engine, const struct stat *ns)
{
	pid_t ppid = getppid(), who = engine > 0 ? engine : ppid;
	struct nsh_proc_stat ps;
	if (who <= 1 || nsh_proc_stat(who, &ps) < 0 || (engine <= 0 && getppid() != ppid))
		return false; /* the parent gone: not the engine */
	unsigned long long start = ps.start;
	struct timespec real, boot;
	long hz = sysconf(_SC_CLK_TCK);
	if (hz <= 0 || clock_gettime(CLOCK_REALTIME, &real) < 0 || clock_gettime(CLOCK_BOOTTIME, &boot) < 0)
		return false;
	long long boot_at = (real.tv_sec - boot.tv_sec) * 1000000000LL + (real.tv_nsec - boot.tv_nsec);
	long long started = boot_at + (long long)(start / (unsigned long long)hz) * 1000000000LL +
			    (long long)(start % (unsigned long long)hz) * (1000000000LL / hz);
	long long pinned = ns->st_ctim.tv_sec * 1000000000LL + ns->st_ctim.tv_nsec;
	return pinned > started + 1000000000LL / hz;
}

bool nsh_pin_recent(time_t now, const struct stat *ns)
{
	/* a pin from the future (the clock stepped back since) is not known
	 * to be recent */
	return now - ns->st_ctim.tv_sec <= NSH_ENGINE_FRESH_S && ns->st_ctim.tv_sec <= now + 1;
}

bool nsh_engine_fresh_netns(int nsfd, const struct stat *ns, pid_t engine)
{
	cleanup_close int owner = ioctl(nsfd, NS_GET_USERNS);
	struct stat o;
	if (owner < 0 || fstat(owner, &o) < 0 || o.st_ino != NSH_PROC_USER_INIT_INO)
		return false;
	struct timespec now;
	if (clock_gettime(CLOCK_REALTIME, &now) < 0 || !nsh_pin_recent(now.tv_sec, ns))
		return false;
	return nsh_pinned_after_start(engine, ns);
}

/* What the engine variant learns inside: a netns made for this start
 * (nsh_engine_fresh_netns) with no socket in use. */
struct engine_look {
	bool fresh;
	char kind[32]; /* the protocol of a socket in use, "" none */
};

/* The interfaces inside the netns at `path` (the calling thread enters it
 * and comes back), and its nsfs inode's stat; with `look`, whether it is
 * fresh for the engine and, if so, a socket in use there. */
static int occupancy_links(const char *path, struct nshash_occupancy *occ, struct stat *nsst,
			   struct engine_look *look, struct nshash_error *err)
{
	memset(occ, 0, sizeof(*occ));
	cleanup_close int fd = -1;
	const char *not_netns;
	int r = nsh_path_open_netns(path, true, &fd, &not_netns);
	if (r < 0)
		return nsh_error_sys(err, r, "open %s", path);
	if (not_netns)
		return nshash_error_set(err, EINVAL, "open %s: not a network namespace (%s)", path, not_netns);
	if (fstat(fd, nsst) < 0)
		return nsh_error_sys(err, errno, "stat %s", path);
	if (look)
		look->fresh = nsh_engine_fresh_netns(fd, nsst, 0);

	cleanup_close int home = -1;
	r = nsh_netns_open_current(&home, err);
	if (r == 0)
		r = nsh_netns_enter(fd, path, err);
	if (r < 0)
		return r;
	struct if_nameindex *ifs = if_nameindex();
	int saved = errno;
	for (struct if_nameindex *i = ifs; i && i->if_index; i++) {
		if (strcmp(i->if_name, "lo") == 0)
			continue;
		size_t used = strlen(occ->link_names);
		if (used + 1 < sizeof(occ->link_names))
			snprintf(occ->link_names + used, sizeof(occ->link_names) - used, "%s%s", occ->links ? ", " : "",
				 i->if_name);
		occ->links++;
	}
	if (ifs)
		if_freenameindex(ifs);
	/* links decide: the sockets are read only when there is none */
	int sr = ifs && !occ->links && look && look->fresh ? nsh_sockets_in_use_here(look->kind, sizeof(look->kind)) : 0;
	r = nsh_netns_return(home, err);
	if (r < 0)
		return r;
	if (!ifs)
		return nsh_error_sys(err, saved, "list the interfaces of %s", path);
	if (sr < 0)
		return nsh_error_sys(err, -sr, "look at the sockets of %s: /proc/net", path);
	return 0;
}

static void occupant(struct nshash_occupancy *occ, pid_t pid)
{
	occ->pid = pid;
	if (!nsh_proc_comm(pid, occ->comm, sizeof(occ->comm)))
		snprintf(occ->comm, sizeof(occ->comm), "?");
}

/* A process with a thread in the netns `ino`: every process is looked at. */
static int occupancy_processes(const char *path, uint64_t ino, struct nshash_occupancy *occ,
			       struct nshash_error *err)
{
	pid_t pid = nsh_netns_user(0, (ino_t)ino);
	if (pid < 0)
		return nsh_error_sys(err, -pid, "look for processes in %s: /proc", path);
	if (pid > 0)
		occupant(occ, pid);
	return 0;
}

int nshash_netns_occupancy(const char *path, struct nshash_occupancy *occ, struct nshash_error *err)
{
	struct stat ns;
	int r = occupancy_links(path, occ, &ns, NULL, err);
	return r < 0 ? r : occupancy_processes(path, ns.st_ino, occ, err);
}

int nshash_netns_occupancy_engine(const char *path, struct nshash_occupancy *occ, struct nshash_error *err)
{
	struct stat ns;
	struct engine_look look = {0};
	int r = occupancy_links(path, occ, &ns, &look, err);
	if (r < 0 || occ->links)
		return r; /* in use by its links: what else is there does not change that */
	/* made for this start and no socket in use: nothing of a running
	 * container's (docs/networks.md, "Who can be in podman's netns") */
	if (look.fresh && !look.kind[0])
		return 0;
	return occupancy_processes(path, ns.st_ino, occ, err);
}

int nshash_netns_occupancy_cgroup(const char *path, int cgroup_fd, struct nshash_occupancy *occ,
				  struct nshash_error *err)
{
	struct stat ns;
	int r = occupancy_links(path, occ, &ns, NULL, err);
	if (r < 0 || cgroup_fd < 0)
		return r;
	pid_t tid = nsh_cgroup_netns_user(cgroup_fd, ns.st_ino);
	if (tid == -E2BIG)
		return nshash_error_set(
		    err, E2BIG,
		    "look for processes in %s: the cgroup holds more than %u threads, %u cgroups or "
		    "%u levels: not all could be looked at",
		    path, NSH_CGROUP_MAX_THREADS, NSH_CGROUP_MAX_DIRS, NSH_CGROUP_MAX_DEPTH);
	if (tid < 0)
		return nsh_error_sys(err, -tid, "look for processes in %s: the cgroup's threads", path);
	if (tid > 0) {
		pid_t pid = nsh_proc_tgid(tid);
		occupant(occ, pid > 0 ? pid : tid);
	}
	return 0;
}
