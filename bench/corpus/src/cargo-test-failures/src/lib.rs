//! Minimal semantic-version parsing and comparison.

use std::cmp::Ordering;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
    pub pre: Option<String>,
}

pub fn parse(s: &str) -> Option<Version> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let (core, pre) = match s.split_once('-') {
        Some((c, p)) => (c, Some(p.to_string())),
        None => (s, None),
    };
    let mut parts = core.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().unwrap_or("0").parse().ok()?;
    let patch = parts.next().unwrap_or("0").parse().ok()?;
    Some(Version { major, minor, patch, pre })
}

pub fn compare(a: &Version, b: &Version) -> Ordering {
    (a.major, a.minor, a.patch)
        .cmp(&(b.major, b.minor, b.patch))
        .then_with(|| match (&a.pre, &b.pre) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(x), Some(y)) => x.cmp(y),
        })
}

pub fn bump_minor(v: &Version) -> Version {
    Version { major: v.major, minor: v.minor + 1, patch: v.patch, pre: None }
}

pub fn max_version(list: &[&str]) -> String {
    let mut best: Option<Version> = None;
    for s in list {
        let v = parse(s).expect("invalid version in list");
        if best.as_ref().map_or(true, |b| compare(&v, b) == Ordering::Greater) {
            best = Some(v);
        }
    }
    let b = best.unwrap();
    format!("{}.{}.{}", b.major, b.minor, b.patch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_full_version() {
        let v = parse("1.2.3").unwrap();
        assert_eq!((v.major, v.minor, v.patch), (1, 2, 3));
    }

    #[test]
    fn parses_v_prefix() {
        assert_eq!(parse("v2.0.1").unwrap().major, 2);
    }

    #[test]
    fn parses_prerelease() {
        assert_eq!(parse("1.0.0-rc.1").unwrap().pre.as_deref(), Some("rc.1"));
    }

    #[test]
    fn missing_parts_default_to_zero() {
        let v = parse("3").unwrap();
        assert_eq!((v.minor, v.patch), (0, 0));
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse("one.two").is_none());
    }

    #[test]
    fn orders_by_numbers() {
        let a = parse("1.10.0").unwrap();
        let b = parse("1.9.5").unwrap();
        assert_eq!(compare(&a, &b), Ordering::Greater);
    }

    #[test]
    fn prerelease_sorts_before_release() {
        let rc = parse("2.0.0-rc.1").unwrap();
        let rel = parse("2.0.0").unwrap();
        assert_eq!(compare(&rc, &rel), Ordering::Less);
    }

    #[test]
    fn bump_minor_resets_patch() {
        let v = bump_minor(&parse("1.4.7").unwrap());
        assert_eq!(v, Version { major: 1, minor: 5, patch: 0, pre: None });
    }

    #[test]
    fn max_of_list() {
        assert_eq!(max_version(&["1.2.0", "1.10.1", "1.9.9"]), "1.10.1");
    }

    #[test]
    fn max_of_list_with_bad_entry() {
        assert_eq!(max_version(&["1.2.0", "latest", "0.9.0"]), "1.2.0");
    }
}
