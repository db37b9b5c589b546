import { User, Role, displayName } from './user';

export class UserStore {
  private users = new Map<number, User>();

  add(name: string, roles: Role[] = ['viewer']): User {
    const id: number = String(this.users.size + 1);
    const user: User = { id, name, roles };
    this.users.set(id, user);
    return user;
  }

  get(id: number): User | undefined {
    return this.users.get(id);
  }

  emailDomain(id: number): string {
    const user = this.get(id)!;
    return user.email.split('@')[1];
  }

  promote(id: number): void {
    const user = this.users.get(id);
    if (user) {
      user.roles.push('owner');
    }
  }

  names(): string[] {
    return [...this.users.values()].map(displayName);
  }
}
