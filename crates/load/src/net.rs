//! Sockets: address parsing, non-blocking connects from chosen source addresses,
//! and the file-descriptor limit a run needs.
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::os::fd::{FromRawFd, RawFd};

/// Split "host:port" ("[::1]:6379" for IPv6), checking the port.
pub fn split_host_port(s: &str) -> Result<(String, u16), String> {
    let (host, port) = s.rsplit_once(':').ok_or_else(|| format!("'{s}' is not host:port"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(format!("'{s}' has no host"));
    }
    let port: u16 =
        port.parse().ok().filter(|p| *p != 0).ok_or_else(|| format!("'{s}': port must be a number from 1 to 65535"))?;
    Ok((host.to_string(), port))
}

/// Resolve "host:port" to one address, preferring IPv4.
pub fn resolve(s: &str) -> Result<SocketAddr, String> {
    let (host, port) = split_host_port(s)?;
    let addrs: Vec<SocketAddr> =
        (host.as_str(), port).to_socket_addrs().map_err(|e| format!("cannot resolve '{host}': {e}"))?.collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
        .ok_or_else(|| format!("'{host}' resolves to no address"))
}

/// Connections one (source address, destination) pair can hold: the ephemeral port range
/// is ~28k ports; stay well below it so other programs keep some.
const CONNS_PER_SOURCE: u64 = 16_000;

/// Source address of connection `n` (0-based among those to `dest`), or `None` to let the
/// kernel choose. Loopback IPv4 destinations with more than CONNS_PER_SOURCE connections
/// get sources spread over 127.0.0.1, 127.0.0.2, … so ephemeral ports do not run out.
pub fn auto_source(dest: &SocketAddr, n: u64, conns_to_dest: u64) -> Option<IpAddr> {
    match dest.ip() {
        IpAddr::V4(ip) if ip.is_loopback() && conns_to_dest > CONNS_PER_SOURCE => {
            let sources = conns_to_dest.div_ceil(CONNS_PER_SOURCE);
            let j = (n % sources) as u32;
            Some(IpAddr::V4(Ipv4Addr::from(u32::from(Ipv4Addr::new(127, 0, 0, 1)) + j)))
        }
        _ => None,
    }
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn sockaddr(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data; we fill the variant matching the family.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(a.ip().octets()) },
                sin_zero: [0; 8],
            };
            unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in, sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: a.ip().octets() },
                sin6_scope_id: a.scope_id(),
            };
            unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in6, sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// Start a non-blocking TCP connect to `dest` (optionally from `source`), with TCP_NODELAY.
/// mio's `TcpStream::connect` cannot bind a source first, hence the raw socket calls.
pub fn start_connect(dest: &SocketAddr, source: Option<IpAddr>) -> io::Result<mio::net::TcpStream> {
    let family = if dest.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    let fd: RawFd =
        cvt(unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) })?;
    // Own the fd at once so that every early return closes it.
    let stream = unsafe { std::net::TcpStream::from_raw_fd(fd) };
    let one: libc::c_int = 1;
    let setopt = |level, name| {
        cvt(unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                &one as *const _ as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        })
    };
    setopt(libc::IPPROTO_TCP, libc::TCP_NODELAY)?;
    if let Some(src) = source {
        // Choose the port at connect() time from the full 4-tuple, not at bind().
        if src.is_ipv4() {
            setopt(libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT)?;
        }
        let (sa, len) = sockaddr(&SocketAddr::new(src, 0));
        cvt(unsafe { libc::bind(fd, &sa as *const _ as *const libc::sockaddr, len) })?;
    }
    let (sa, len) = sockaddr(dest);
    let r = unsafe { libc::connect(fd, &sa as *const _ as *const libc::sockaddr, len) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    Ok(mio::net::TcpStream::from_std(stream))
}

/// Make sure the process may open `needed` file descriptors: raise the soft limit, and
/// the hard one when privileged. Returns the limit in force, or an error saying how short it is.
pub fn ensure_fd_limit(needed: u64) -> Result<u64, String> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(format!("getrlimit: {}", io::Error::last_os_error()));
    }
    if lim.rlim_cur >= needed {
        return Ok(lim.rlim_cur);
    }
    let want = libc::rlimit { rlim_cur: needed, rlim_max: lim.rlim_max.max(needed) };
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } == 0 {
        return Ok(needed);
    }
    let soft = libc::rlimit { rlim_cur: lim.rlim_max.min(needed), rlim_max: lim.rlim_max };
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &soft) };
    Err(format!(
        "{needed} file descriptors are needed but the limit is {} (raise it with `ulimit -n`, or use fewer connections)",
        lim.rlim_max
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port() {
        assert_eq!(split_host_port("127.0.0.1:11211").unwrap(), ("127.0.0.1".into(), 11211));
        assert_eq!(split_host_port("[::1]:6379").unwrap(), ("::1".into(), 6379));
        assert!(split_host_port("localhost").is_err());
        assert!(split_host_port(":80").is_err());
        assert!(split_host_port("h:0").is_err());
        assert!(split_host_port("h:x").is_err());
    }

    #[test]
    fn sources_spread_only_when_needed() {
        let d: SocketAddr = "127.0.0.1:11211".parse().unwrap();
        assert_eq!(auto_source(&d, 5, 100), None);
        let ips: std::collections::HashSet<_> = (0..50_000).map(|n| auto_source(&d, n, 50_000).unwrap()).collect();
        assert_eq!(ips.len(), 4);
        assert!(ips.iter().all(|ip| matches!(ip, IpAddr::V4(v) if v.is_loopback())));
        let remote: SocketAddr = "10.1.2.3:11211".parse().unwrap();
        assert_eq!(auto_source(&remote, 5, 50_000), None);
    }

    #[test]
    fn refused_connect_reports_error() {
        // Port 1 on loopback: nothing listens there in a test environment.
        let d: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let s = start_connect(&d, None).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let e = s.take_error().unwrap().or_else(|| s.peer_addr().err());
        assert!(e.is_some());
    }
}
