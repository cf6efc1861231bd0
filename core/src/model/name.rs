//! The names of users and accounts: one character set, checked wherever a name enters the grid
//! (a submission's owner, a token's user, an association of the fair-share tree), so a name is
//! safe as a file name, in a log line and on a command line at any site.
//!
//! A name is 1 to [`MAX_NAME`] bytes of ASCII letters, digits and `_ . @ -`, beginning with a
//! letter, a digit or `_` (Unix account names, and HTCondor's `user@domain`, fit; `..`, `/` and
//! spaces do not).

/// The longest name, in bytes.
pub const MAX_NAME: usize = 64;

/// Why a name is refused, for a message that ends "… is not a valid name: {why}".
pub fn check_name(name: &str) -> Result<(), String> {
    let Some(first) = name.chars().next() else {
        return Err("empty".into());
    };
    if name.len() > MAX_NAME {
        return Err(format!("{} bytes, more than {MAX_NAME}", name.len()));
    }
    if !(first.is_ascii_alphanumeric() || first == '_') {
        return Err(format!(
            "begins with `{}`: a name begins with a letter, a digit or `_`",
            first.escape_default()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '@' | '-')))
    {
        return Err(format!(
            "`{}` is not allowed: letters, digits, `_`, `.`, `@` and `-` only",
            c.escape_default()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_and_domain_names_pass_and_paths_do_not() {
        for ok in [
            "ann",
            "u12",
            "_svc",
            "ann.lee",
            "ann@lab.example",
            "a-b",
            "7",
        ] {
            assert_eq!(check_name(ok), Ok(()), "{ok}");
        }
        let why = |n: &str| check_name(n).unwrap_err();
        assert_eq!(
            why("../../etc/passwd"),
            "begins with `.`: a name begins with a letter, a digit or `_`"
        );
        assert_eq!(
            why("ann/../bob"),
            "`/` is not allowed: letters, digits, `_`, `.`, `@` and `-` only"
        );
        assert_eq!(
            why("ann lee"),
            "` ` is not allowed: letters, digits, `_`, `.`, `@` and `-` only"
        );
        assert_eq!(why(""), "empty");
        assert_eq!(
            why("-rf"),
            "begins with `-`: a name begins with a letter, a digit or `_`"
        );
        assert_eq!(
            why("ann\n"),
            "`\\n` is not allowed: letters, digits, `_`, `.`, `@` and `-` only"
        );
        assert_eq!(
            why("é"),
            "begins with `\\u{e9}`: a name begins with a letter, a digit or `_`"
        );
        assert_eq!(why(&"a".repeat(65)), "65 bytes, more than 64");
        assert_eq!(check_name(&"a".repeat(64)), Ok(()));
    }
}
