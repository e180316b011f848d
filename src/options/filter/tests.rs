use super::*;

fn filter(rules: &[&str]) -> Filter {
    let mut f = Filter::default();
    for r in rules {
        f.add_arg(Arg::Filter, r.as_bytes()).unwrap();
    }
    f
}

/// A directory as the walk gives one the command line names (read by path).
fn dir(path: &Path) -> crate::source::SrcEntry {
    crate::source::SrcEntry {
        name: Default::default(),
        path: path.to_path_buf(),
        meta: crate::meta::Meta::from_std(&std::fs::metadata("/").unwrap()),
        parent: None,
    }
}

fn ex(f: &Filter, rel: &str, side: Side) -> bool {
    f.excluded(&Scope::default(), Path::new(rel), false, side)
}

#[test]
fn first_match_wins() {
    let f = filter(&["+ keep.log", "- *.log"]);
    assert!(!f.is_excluded(Path::new("d/keep.log"), false));
    assert!(f.is_excluded(Path::new("d/other.log"), false));
}

#[test]
fn sides_of_hide_show_protect_risk() {
    let f = filter(&["H h", "P p", "R r", "- r", "S s", "- s", "- both"]);
    assert!(ex(&f, "h", Side::Sender) && !ex(&f, "h", Side::Receiver));
    assert!(!ex(&f, "p", Side::Sender) && ex(&f, "p", Side::Receiver));
    assert!(ex(&f, "r", Side::Sender) && !ex(&f, "r", Side::Receiver));
    assert!(!ex(&f, "s", Side::Sender) && ex(&f, "s", Side::Receiver));
    assert!(ex(&f, "both", Side::Sender) && ex(&f, "both", Side::Receiver));
}

#[test]
fn delete_excluded_leaves_only_protect_rules_on_the_receiver() {
    let mut f = Filter::new(true);
    for r in ["P *.keep", "- *.o", "-r *.r"] {
        f.add_arg(Arg::Filter, r.as_bytes()).unwrap();
    }
    f.add(b"*.x", false).unwrap();
    assert!(ex(&f, "a.o", Side::Sender) && !ex(&f, "a.o", Side::Receiver));
    assert!(ex(&f, "a.x", Side::Sender) && !ex(&f, "a.x", Side::Receiver));
    assert!(ex(&f, "a.keep", Side::Receiver));
    assert!(ex(&f, "a.r", Side::Receiver) && !ex(&f, "a.r", Side::Sender));
}

#[test]
fn clear_forgets_earlier_rules() {
    let f = filter(&["- a", "!", "- b"]);
    assert!(!ex(&f, "a", Side::Sender));
    assert!(ex(&f, "b", Side::Sender));
    let mut f = Filter::default();
    f.add(b"a", false).unwrap();
    f.add(b"!", false).unwrap();
    assert!(f.is_empty());
}

#[test]
fn exclude_prefix_in_include_and_exclude_args() {
    let mut f = Filter::default();
    f.add(b"+ keep", false).unwrap();
    f.add(b"*", false).unwrap();
    assert!(!ex(&f, "keep", Side::Sender));
    assert!(ex(&f, "other", Side::Sender));
}

#[test]
fn negation_and_perishable() {
    let f = filter(&["-! *.c"]);
    assert!(ex(&f, "a.o", Side::Sender) && !ex(&f, "a.c", Side::Sender));
    let f = filter(&["-p *.o"]);
    let s = Scope::default();
    assert!(f.excluded(&s, Path::new("d/a.o"), false, Side::Receiver));
    assert!(!f.protected_in_deletion(&s, Path::new("d"), Path::new("d/a.o"), false));
}

#[test]
fn protection_inside_a_deleted_directory_covers_protected_directories() {
    let f = filter(&["P keep/", "P *.p"]);
    let s = Scope::default();
    let top = Path::new("gone");
    assert!(f.protected_in_deletion(&s, top, Path::new("gone/x.p"), false));
    assert!(f.protected_in_deletion(&s, top, Path::new("gone/keep/y"), false));
    assert!(!f.protected_in_deletion(&s, top, Path::new("gone/y"), false));
}

#[test]
fn exclude_from_reads_rsync_filter_lines() {
    let mut f = Filter::default();
    f.add_text(
        b"# comment\n\n+ keep.tmp\r\n- *.tmp\n*.bak\n; more\n",
        false,
    )
    .unwrap();
    assert!(!f.is_excluded(Path::new("keep.tmp"), false));
    assert!(f.is_excluded(Path::new("x.tmp"), false));
    assert!(f.is_excluded(Path::new("x.bak"), false));
    let mut f = Filter::default();
    f.add_text(b"x\n- y\n", true).unwrap();
    assert!(!ex(&f, "x", Side::Sender) && ex(&f, "y", Side::Sender));
}

#[test]
fn dir_merge_files_are_inherited_unless_n() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    std::fs::write(root.join(".f"), "- *.o\n").unwrap();
    std::fs::write(root.join("a/.f"), "+ keep.o\n- /local\n").unwrap();
    std::fs::write(root.join(".n"), "- *.n\n").unwrap();
    let f = filter(&[": .f", ":n .n"]);
    let (top, errs) = f.root_scope(root, Some(&dir(root)), true);
    assert!(errs.is_empty());
    let (a, _) = f.enter(&top, &dir(&root.join("a")), Path::new("a"));
    let (b, _) = f.enter(&a, &dir(&root.join("a/b")), Path::new("a/b"));
    let x = |s: &Scope, rel: &str| f.excluded(s, Path::new(rel), false, Side::Sender);
    assert!(x(&top, "x.o") && x(&b, "a/b/x.o"));
    assert!(x(&top, "keep.o") && !x(&a, "a/keep.o") && !x(&b, "a/b/keep.o"));
    assert!(x(&a, "a/local") && !x(&b, "a/b/local"));
    assert!(x(&top, "x.n") && !x(&a, "a/x.n"));
}

#[test]
fn dir_merge_clear_drops_inherited_rules() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("a")).unwrap();
    std::fs::write(root.join(".f"), "- *.o\n").unwrap();
    std::fs::write(root.join("a/.f"), "!\n- *.p\n").unwrap();
    let f = filter(&["dir-merge .f"]);
    let (top, _) = f.root_scope(root, Some(&dir(root)), true);
    let (a, _) = f.enter(&top, &dir(&root.join("a")), Path::new("a"));
    assert!(!f.excluded(&a, Path::new("a/x.o"), false, Side::Sender));
    assert!(f.excluded(&a, Path::new("a/x.p"), false, Side::Sender));
}

#[test]
fn cvs_exclude_reads_cvsignore_words_not_inherited() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("a")).unwrap();
    std::fs::write(root.join(".cvsignore"), "one.x  two.x\nthree.x").unwrap();
    let mut f = Filter::default();
    f.add_cvs_exclude().unwrap();
    let (top, _) = f.root_scope(root, Some(&dir(root)), true);
    let (a, _) = f.enter(&top, &dir(&root.join("a")), Path::new("a"));
    for n in ["one.x", "two.x", "three.x", "core", "x.o", ".git"] {
        let is_dir = n == ".git";
        assert!(f.excluded(&top, Path::new(n), is_dir, Side::Sender), "{n}");
    }
    assert!(!f.excluded(&a, Path::new("a/one.x"), false, Side::Sender));
    // The built-in names are perishable.
    assert!(!f.protected_in_deletion(&top, Path::new("d"), Path::new("d/x.o"), false));
}

#[test]
fn a_merge_file_named_in_a_merge_file_is_neither_shown_nor_located() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("src");
    std::fs::create_dir_all(root.join("a")).unwrap();
    std::fs::write(tmp.path().join("secret"), "SECRET-LINE\n").unwrap();
    std::fs::write(root.join(".f"), ": ../secret\n").unwrap();
    std::fs::write(root.join("a/.g"), "- sec[r]et-x\n").unwrap();
    std::fs::write(root.join("a/.f"), ": .g\n").unwrap();
    let f = filter(&[": .f"]);
    let (top, errs) = f.root_scope(&root, Some(&dir(&root)), true);
    let said: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
    assert!(
        said.len() == 1
            && said[0].ends_with(": <rule from a file read earlier>")
            && !said[0].contains("SECRET"),
        "{said:?}"
    );
    // `.g`, named in a/.f, works in a and below, not beside it; what decided is
    // said by place.
    let (a, _) = f.enter(&top, &dir(&root.join("a")), Path::new("a"));
    let (b, _) = f.enter(&a, &dir(&root.join("a/b")), Path::new("a/b"));
    let side = Side::Sender;
    let by = |s: &Scope, rel: &str| {
        f.decided_by(s, Path::new(rel), false, side)
            .map(|(x, why)| (x, why.to_string()))
    };
    assert_eq!(
        by(&a, "a/secret-x"),
        Some((true, "<rule from a file read earlier>".to_string()))
    );
    assert!(by(&b, "a/b/secret-x").is_some() && by(&top, "secret-x").is_none());
    let f = filter(&["- own[r]ule"]);
    let s = Scope::default();
    assert_eq!(
        f.decided_by(&s, Path::new("ownrule"), false, side),
        Some((true, "own[r]ule"))
    );
}

#[test]
fn over_long_rules_are_left_out_and_trailing_blanks_noted() {
    let mut f = Filter::default();
    f.set_debug(1);
    let long = format!("- {}", "Q".repeat(5000));
    f.add_arg(Arg::Filter, long.as_bytes()).unwrap();
    f.add_arg(Arg::Filter, b"- mine ").unwrap();
    assert!(f.rules.len() == 1);
    let notes = f.take_notes();
    assert!(matches!(&notes[0], Note::Warn(w)
        if w.starts_with("discarding over-long filter: QQQ") && w.len() > 5000));
    assert!(matches!(&notes[1], Note::Debug(d)
        if d == "[sender] add_rule(- mine ) -- CAUTION: trailing whitespace!"));
    // A file's rule is not mentioned, however it ends.
    let tmp = tempfile::tempdir().unwrap();
    let rules = tmp.path().join("rules");
    std::fs::write(&rules, "- theirs \n").unwrap();
    f.add_file(&rules, false).unwrap();
    assert!(f.take_notes().is_empty());
}

#[test]
fn merge_reads_a_file_now_and_e_excludes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let rules = tmp.path().join("rules");
    std::fs::write(&rules, "- *.a\n+ b\n").unwrap();
    let f = filter(&[&format!("merge,e {}", rules.display()), "- *"]);
    assert!(ex(&f, "x.a", Side::Sender));
    assert!(!ex(&f, "b", Side::Sender));
    assert!(ex(&f, "rules", Side::Sender));
    let mut f = Filter::default();
    let missing = tmp.path().join("missing");
    let e = f.add_arg(Arg::Filter, format!(". {}", missing.display()).as_bytes());
    assert!(
        e.unwrap_err()
            .to_string()
            .starts_with("failed to open exclude file")
    );
}

#[test]
fn a_merge_file_name_too_long_once_its_directory_is_in_front_is_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let pad = 4096 - root.as_os_str().len() - 10;
    let rule = format!(": sub/HIDDEN-{}\n", "Q".repeat(pad));
    std::fs::write(root.join(".f"), &rule).unwrap();
    let f = filter(&[": .f"]);
    let (_, errs) = f.root_scope(root, Some(&dir(root)), true);
    let said: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
    let place = format!("{}/.f line 1", root.display());
    assert_eq!(
        said,
        [format!("merge-file name overflows: <rule from {place}>")]
    );
}
