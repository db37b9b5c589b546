interface User { id: number; name: string; email?: string }
export function label(u: User): string {
  return u.email.toUpperCase() + u.nme;
}
export const users: User[] = [{ id: '1', name: 'a' }];
