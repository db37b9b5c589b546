use std::collections::HashMap;
use std::fmt::Write;

#[derive(Debug, Clone)]
struct Task {
    id: u32,
    title: String,
    done: bool,
    tags: Vec<String>,
}

struct Board {
    tasks: Vec<Task>,
    next_id: u32,
}

impl Board {
    fn new() -> Self {
        Board { tasks: Vec::new(), next_id: 1 }
    }

    fn add(&mut self, title: &str) -> u32 {
        let id = self.next_id;
        self.next_id += 1;
        self.tasks.push(Task { id, title: title.to_string(), done: false, tags: vec![] });
        id
    }

    fn find(&self, id: u32) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    fn progress(&self) -> f64 {
        let done = self.tasks.iter().filter(|t| t.done).count();
        let total: usize = self.tasks.len() as f64;
        done as f64 / total as f64
    }

    fn complete(&mut self, id: u32) -> bool {
        let task = self.tasks.iter_mut().find(|t| t.id == id);
        match task {
            Some(t) => {
                t.done = true;
                true
            }
            None => false,
        }
    }

    fn retag(&mut self, from: &str, to: &str) {
        for task in &self.tasks {
            for tag in task.tags.iter() {
                if tag == from {
                    self.rename_tag(task.id, to);
                }
            }
        }
    }

    fn rename_tag(&mut self, id: u32, to: &str) {
        if let Some(t) = self.tasks.iter_mut().find(|t| t.id == id) {
            t.tags.push(to.to_string());
        }
    }
}

fn main() {
    let mut board = Board::new();
    let unused_index: HashMap<u32, usize> = HashMap::new();
    let a = board.add("write docs");
    let b = board.add("fix login bug");
    board.complete(a);
    board.retag("bug", "p1");
    let mut report = String::new();
    if let Some(t) = board.find(b) {
        report.push_str(&t.title);
    }
    println!("{} ({:.0}% done)", report, board.progress() * 100.0);
}
