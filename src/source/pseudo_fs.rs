//! Kernel pseudo file systems (procfs, sysfs, ...): their files are not data, may block or change
//! between reads, so neither the trust check nor local reads accept them.

use std::path::Path;

/// The name of the kernel pseudo file system `path` lives on, if any (by `statfs` magic number).
pub(crate) fn pseudo_file_system(path: &Path) -> Option<&'static str> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid NUL-terminated path and a zeroed out-parameter of the right type.
    if unsafe { libc::statfs(c_path.as_ptr(), &mut stat) } != 0 {
        return None;
    }
    // Magic numbers are 32-bit; `f_type` is a signed word of platform width.
    #[allow(clippy::unnecessary_cast)]
    let magic = (stat.f_type as u64 & 0xffff_ffff) as u32;
    const PSEUDO: [(u32, &str); 12] = [
        (0x9fa0, "procfs"),
        (0x6265_6572, "sysfs"),
        (0x6462_6720, "debugfs"),
        (0x7472_6163, "tracefs"),
        (0x7363_6673, "securityfs"),
        (0x0027_e0eb, "cgroupfs"),
        (0x6367_7270, "cgroup2fs"),
        (0x6265_6570, "configfs"),
        (0xcafe_4a11, "bpffs"),
        (0x6165_676c, "pstorefs"),
        (0xde5e_81e4, "efivarfs"),
        (0x1cd1, "devpts"),
    ];
    PSEUDO.iter().find(|(m, _)| *m == magic).map(|(_, name)| *name)
}
